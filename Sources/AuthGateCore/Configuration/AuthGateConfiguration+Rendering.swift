import NIOCore
import RedisBridge
import Yams

extension AuthGateConfiguration {
    /// The effective configuration as YAML, defaults filled in and secrets masked: what
    /// `authgate check-config` prints. Key files are shown by path; passwords never appear.
    public func renderedYAML() -> String {
        let document: Node = [
            "server": renderedServer(),
            "store": renderedStore(),
            "tokens": [
                "issuer": Node(tokens.issuer),
                "audience": Node(tokens.audience),
                "access_token_ttl": Node(format(tokens.accessTokenTTL)),
                "signing_keys": Node(
                    tokens.signingKeys.map { key -> Node in
                        ["kid": Node(key.kid), "file": Node(key.file), "state": Node(key.state.rawValue), "algorithm": Node(key.algorithm.rawValue)]
                    }
                ),
                "refresh": [
                    "reuse_interval": Node(format(tokens.refresh.reuseInterval)),
                    "session_timebox": Node(format(tokens.refresh.sessionTimebox)),
                    "inactivity_timeout": Node(format(tokens.refresh.inactivityTimeout)),
                    "max_sessions_per_user": Node(String(tokens.refresh.maxSessionsPerUser))
                ],
                "admin_roles": Node(tokens.adminRoles.map { Node($0) })
            ],
            "providers": [
                "apple": renderedApple(),
                "google": rendered(providers.google, isBuiltIn: true),
                "anonymous": ["enabled": Node(String(providers.anonymous.enabled))],
                "oidc": Node(providers.oidc.map { rendered($0, isBuiltIn: false) })
            ],
            "replay": [
                "enabled": Node(String(replay.enabled)),
                "leeway": Node(format(replay.leeway)),
                "server_nonce_ttl": Node(format(replay.serverNonceTTL))
            ],
            "rate_limits": [
                "token": Node(rateLimits.token?.description ?? "off"),
                "signup": Node(rateLimits.signup?.description ?? "off"),
                "nonce": Node(rateLimits.nonce?.description ?? "off"),
                "user_update": Node(rateLimits.userUpdate?.description ?? "off"),
                "ipv6_prefix_length": Node(String(rateLimits.ipv6PrefixLength))
            ],
            "users": [
                "max_user_metadata": Node(ConfigurationValueParsers.format(bytes: users.maxUserMetadata)),
                "max_app_metadata": Node(ConfigurationValueParsers.format(bytes: users.maxAppMetadata)),
                "disable_signup": Node(String(users.disableSignup)),
                "allow_self_delete": Node(String(users.allowSelfDelete)),
                "self_delete": Node(users.selfDelete.rawValue),
                "self_delete_max_auth_age": Node(format(users.selfDeleteMaxAuthAge))
            ],
            "security": ["manual_linking_enabled": Node(String(security.manualLinkingEnabled))],
            "browser_flow": renderedBrowserFlow(),
            "routes": Node(routes.map(rendered)),
            "proxy": [
                "identity_header_prefix": Node(proxy.identityHeaderPrefix),
                "revocation_max_staleness": Node(format(proxy.revocationMaxStaleness)),
                "token_cache_size": Node(String(proxy.tokenCacheSize)),
                "max_connections_per_upstream": Node(String(proxy.maxConnectionsPerUpstream)),
                "max_websocket_frame": Node(ConfigurationValueParsers.format(bytes: proxy.maxWebSocketFrame)),
                "max_websocket_tunnels": Node(String(proxy.maxWebSocketTunnels))
            ],
            "logging": [
                "level": Node(logging.level.rawValue), "format": Node(logging.format.rawValue),
                "buffer": Node(ConfigurationValueParsers.format(bytes: logging.buffer))
            ],
            "tracing": [
                "enabled": Node(String(tracing.enabled)), "endpoint": Node(tracing.endpoint), "service_name": Node(tracing.serviceName)
            ]
        ]
        return (try? Yams.serialize(node: document, sortKeys: false)) ?? ""
    }

    /// `browser_flow`, its providers by client id and URLs (Google's client secret by its file's path).
    private func renderedBrowserFlow() -> Node {
        var pairs: [(Node, Node)] = [
            ("enabled", Node(String(browserFlow.enabled))),
            ("site_url", Node(browserFlow.siteURL.text)),
            ("redirect_urls", Node(browserFlow.redirectURLs.map { Node($0.pattern) })),
            ("callback_url", Node(browserFlow.callbackURL)),
            ("flow_lifetime", Node(format(browserFlow.flowLifetime))),
            ("implicit_linking", Node(String(browserFlow.implicitLinking))),
            ("implicit_flow_cookie", Node(String(browserFlow.implicitFlowCookie)))
        ]
        var oidc: [Node] = []
        for name in browserFlow.providers.keys.sorted() {
            guard let provider = browserFlow.providers[name] else { continue }
            let builtIn = name == "google" || name == "apple"
            var fields: [(Node, Node)] = []
            if !builtIn { fields.append((Node("name"), Node(name))) }
            fields.append(("client_id", Node(provider.clientID)))
            if let url = provider.authorizeURL { fields.append(("authorize_url", Node(url))) }
            if let file = provider.clientSecretFile { fields.append(("client_secret_file", Node(file))) }
            if name != "apple", let url = provider.tokenURL { fields.append(("token_url", Node(url))) }
            if !builtIn { fields.append(("scopes", Node(provider.scopes.map { Node($0) }))) }
            if builtIn { pairs.append((Node(name), Node(fields))) } else { oidc.append(Node(fields)) }
        }
        pairs.append(("oidc", Node(oidc)))
        return Node(pairs)
    }

    /// `server`, with `tls` only when it is set.
    private func renderedServer() -> Node {
        var pairs: [(Node, Node)] = [
            ("host", Node(server.host)),
            ("port", Node(String(server.port))),
            ("public_url", Node(server.publicURL)),
            ("trusted_proxies", Node(server.trustedProxies.map { Node($0.description) })),
            ("shutdown_timeout", Node(format(server.shutdownTimeout))),
            ("metrics_port", Node(String(server.metricsPort))),
            ("max_connections", Node(String(server.maxConnections))),
            ("request_head_timeout", Node(format(server.requestHeadTimeout))),
            ("keep_alive_timeout", Node(format(server.keepAliveTimeout))),
            ("client_idle_timeout", Node(format(server.clientIdleTimeout))),
            ("cors_allowed_origins", Node(server.corsAllowedOrigins.map { Node($0) })),
            (
                "http2",
                [
                    "enabled": Node(String(server.http2.enabled)), "max_concurrent_streams": Node(String(server.http2.maxConcurrentStreams)),
                    "max_header_list_size": Node(ConfigurationValueParsers.format(bytes: server.http2.maxHeaderListSize))
                ]
            )
        ]
        if let tls = server.tls {
            var settings: [(Node, Node)] = [
                ("certificate_chain_file", Node(tls.certificateChainFile)), ("private_key_file", Node(tls.privateKeyFile)),
                ("minimum_version", Node(tls.minimumVersion.rawValue))
            ]
            if let clientCA = tls.clientCAFile { settings.append(("client_ca_file", Node(clientCA))) }
            pairs.append(("tls", Node.mapping(Node.Mapping(settings))))
        }
        return Node.mapping(Node.Mapping(pairs))
    }

    private func renderedStore() -> Node {
        var pairs: [(Node, Node)] = [(Node("kind"), Node(store.kind.rawValue))]
        if let redis = store.redis {
            var redisNode: Node = [
                "url": Node(redis.url.description),
                "key_prefix": Node(redis.keyPrefix),
                "pool_size": Node(String(redis.poolSize)),
                "connect_timeout": Node(format(redis.connectTimeout)),
                "command_timeout": Node(format(redis.commandTimeout)),
                "record_cache_size": Node(String(redis.recordCacheSize)),
                "reconnect": ["min_backoff": Node(format(redis.minReconnectBackoff)), "max_backoff": Node(format(redis.maxReconnectBackoff))]
            ]
            if let acknowledgement = redis.replicaAcknowledgement {
                redisNode["min_replicas_acked"] = Node(String(acknowledgement.replicas))
                redisNode["replica_ack_timeout"] = Node(format(Duration.nanoseconds(acknowledgement.timeout.nanoseconds)))
            }
            if let sentinel = redis.sentinel {
                var sentinelNode: Node = [
                    "master_name": Node(sentinel.masterName),
                    "nodes": Node(sentinel.nodes.map { Node($0.description) })
                ]
                if let username = sentinel.username { sentinelNode["username"] = Node(username) }
                if sentinel.password != nil { sentinelNode["password"] = Node("***") }
                redisNode["sentinel"] = sentinelNode
            }
            if redis.url.tls { redisNode["tls"] = rendered(redis.tls) }
            pairs.append((Node("redis"), redisNode))
        }
        return Node(pairs)
    }

    /// A client TLS section: the files (paths, never contents) and the server name; no `ca_file`
    /// means the system's roots.
    private func rendered(_ tls: TLSClientConfiguration) -> Node {
        var pairs: [(Node, Node)] = []
        if let caFile = tls.caFile { pairs.append((Node("ca_file"), Node(caFile))) }
        if let serverName = tls.serverName { pairs.append((Node("server_name"), Node(serverName))) }
        if let chain = tls.certificateChainFile { pairs.append((Node("certificate_chain_file"), Node(chain))) }
        if let key = tls.privateKeyFile { pairs.append((Node("private_key_file"), Node(key))) }
        return Node(pairs)
    }

    /// The Apple provider, with its REST API credentials when set (the key's file, never the key).
    private func renderedApple() -> Node {
        let node = rendered(providers.apple, isBuiltIn: true)
        guard let server = providers.appleServer, case .mapping(var mapping) = node else { return node }
        mapping["team_id"] = Node(server.teamID)
        mapping["key_id"] = Node(server.keyID)
        mapping["private_key_file"] = Node(server.privateKeyFile)
        mapping["client_secret_ttl"] = Node(format(server.clientSecretLifetime))
        return .mapping(mapping)
    }

    /// A provider block. Built-in providers have fixed issuers, so only OIDC ones print theirs;
    /// an OIDC provider without a JWKS source finds its keys by discovery.
    private func rendered(_ provider: ProvidersConfiguration.IDTokenProvider, isBuiltIn: Bool) -> Node {
        var pairs: [(Node, Node)] = []
        if !isBuiltIn {
            pairs.append((Node("name"), Node(provider.name)))
            pairs.append((Node("issuer"), Node(provider.issuers.first ?? "")))
        }
        pairs += [
            (Node("enabled"), Node(String(provider.enabled))),
            (Node("audiences"), Node(provider.audiences.map { Node($0) }))
        ]
        switch provider.keySource {
        case .url(let url): pairs.append((Node("jwks_url"), Node(url)))
        case .file(let file): pairs.append((Node("jwks_file"), Node(file)))
        case .discovery: break
        }
        pairs += [
            (Node("algorithm"), Node(provider.algorithm.rawValue)),
            (Node("skip_nonce_check"), Node(String(provider.skipNonceCheck))),
            (Node("require_server_nonce"), Node(String(provider.requireServerNonce))),
            (Node("leeway"), Node(format(provider.leeway))),
            (Node("clock_skew"), Node(format(provider.clockSkew)))
        ]
        return Node(pairs)
    }

    private func rendered(_ route: RouteConfiguration) -> Node {
        var pairs: [(Node, Node)] = [
            (Node("name"), Node(route.name)),
            (Node("path_prefix"), Node(route.pathPrefix))
        ]
        if let host = route.host { pairs.append((Node("host"), Node(host))) }
        if !route.methods.isEmpty { pairs.append((Node("methods"), Node(route.methods.map { Node($0) }))) }
        pairs += [
            (Node("upstreams"), Node(route.upstreams.map { Node($0.description) })),
            (Node("strip_prefix"), Node(String(route.stripPrefix))),
            (Node("auth"), Node(route.auth.rawValue)),
            (Node("allow_anonymous"), Node(String(route.allowAnonymous))),
            (Node("require_claims"), Node(route.requireClaims.sorted { $0.key < $1.key }.map { (Node($0.key), Node($0.value)) })),
            (Node("forward_authorization"), Node(String(route.forwardAuthorization))),
            (Node("timeout"), Node(format(route.timeout))),
            (Node("connect_timeout"), Node(format(route.connectTimeout))),
            (Node("idle_timeout"), Node(format(route.idleTimeout))),
            (Node("max_body"), Node(ConfigurationValueParsers.format(bytes: route.maxBody)))
        ]
        if route.hasHTTPSUpstream { pairs.append((Node("tls"), rendered(route.tls))) }
        if let cors = route.cors {
            pairs.append(
                (
                    Node("cors"),
                    Node([
                        (Node("allowed_origins"), Node(cors.allowedOrigins.map { Node($0) })),
                        (Node("allowed_headers"), Node(cors.allowedHeaders.map { Node($0) })),
                        (Node("expose_headers"), Node(cors.exposeHeaders.map { Node($0) })),
                        (Node("allow_credentials"), Node(String(cors.allowCredentials))),
                        (Node("max_age"), Node(format(cors.maxAge)))
                    ])
                ))
        }
        return Node(pairs)
    }

    private func format(_ duration: Duration) -> String { ConfigurationValueParsers.format(duration) }
}
