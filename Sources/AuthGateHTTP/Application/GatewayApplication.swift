public import AsyncHTTPClient
public import AuthGateCore
public import Hummingbird
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOPosix
public import Prometheus
import RedisBridge
public import ServiceLifecycle

/// Builds the Hummingbird application that serves AuthGate: health and readiness now; the GoTrue
/// API, the admin API and the edge proxy as they land.
public enum GatewayApplication {
    /// The version `/health` reports.
    public static let version = "0.1.0"

    /// Everything the application needs, built once at start.
    public struct Dependencies: Sendable {
        public let configuration: AuthGateConfiguration
        public let store: any AuthStore
        /// The signing keys in force (replaced by ``SigningKeyReloader`` on SIGHUP or a key-file
        /// change); nil without keys.
        public let signingKeys: SigningKeys?
        /// The identity verifiers of the enabled providers.
        public let verifiers: IdentityVerifierRegistry
        /// Server-issued nonces.
        public let nonces: ServerNonceIssuer
        /// Sign-in, sessions and users; nil without signing keys.
        public let accounts: AccountService?
        /// Revocations this replica knows of (fed by the stream, or in process).
        public let revocations: RevocationView
        /// The edge proxy; nil without routes or keys.
        public let edge: EdgeProxy?
        /// The browser redirect flow; nil unless `browser_flow.enabled` (and keys and a provider
        /// HTTP client are there).
        public let browserFlow: BrowserFlowService?
        /// Mints Apple's `client_secret`; nil unless `providers.apple` has `team_id`, `key_id`
        /// and `private_key_file`.
        public let appleClientSecrets: AppleClientSecretMinter?
        /// Revokes provider refresh tokens from the outbox (``ProviderRevocationWorker`` runs it).
        public let providerTokenRevoker: ProviderTokenRevoker
        /// The listener's TLS context (`server.tls`); nil for plain HTTP.
        public let serverTLS: ServerTLSContext?
        /// The application's logger (services and operator actions log through it).
        public let logger: Logger
        /// Where the metrics are collected when `authgate serve` bootstrapped swift-metrics with
        /// Prometheus; `/metrics` renders it.
        public let metrics: PrometheusCollectorRegistry?

        public init(
            configuration: AuthGateConfiguration,
            store: any AuthStore,
            keyRing: SigningKeyRing?,
            verifiers: IdentityVerifierRegistry? = nil,
            upstreamConnections: UpstreamConnectionPool? = nil,
            metrics: PrometheusCollectorRegistry? = nil,
            providerHTTPClient: HTTPClient? = nil,
            discovery: OIDCDiscovery? = nil,
            serverTLS: ServerTLSContext? = nil,
            logger: Logger = Logger(label: "authgate")
        ) {
            self.serverTLS = serverTLS
            self.metrics = metrics
            self.configuration = configuration
            self.store = store
            let signingKeys = keyRing.map(SigningKeys.init)
            self.signingKeys = signingKeys
            self.logger = logger
            let verifiers =
                verifiers ?? IdentityVerifierRegistry(verifiers: [], anonymous: AnonymousProvider(configuration: configuration.providers.anonymous))
            let nonces = ServerNonceIssuer(store: store, lifetime: configuration.replay.serverNonceTTL)
            self.verifiers = verifiers
            self.nonces = nonces
            let appleClientSecrets = configuration.providers.appleServer.map {
                AppleClientSecretMinter(configuration: $0, clientIDs: configuration.providers.apple.audiences)
            }
            self.appleClientSecrets = appleClientSecrets
            let sealer = configuration.providers.tokenEncryptionKey.map(ProviderTokenSealer.init)
            let appleClient: AppleTokenClient? = appleClientSecrets.flatMap { secrets in
                guard let providerHTTPClient, let server = configuration.providers.appleServer else { return nil }
                return AppleTokenClient(http: providerHTTPClient, secrets: secrets, apiURL: server.apiURL)
            }
            self.providerTokenRevoker = ProviderTokenRevoker(
                sealer: sealer, apple: appleClient,
                google: providerHTTPClient.map { GoogleTokenClient(http: $0, revocationURL: configuration.providers.googleRevocationURL) })
            self.accounts = signingKeys.map { keys in
                var accounts = AccountService(
                    store: store,
                    tokens: configuration.tokens,
                    keys: keys,
                    idTokens: IDTokenSignInVerifier(
                        registry: verifiers,
                        replayGuard: ReplayGuard(store: store, configuration: configuration.replay),
                        nonces: nonces
                    ),
                    logger: logger,
                    verifiedTokenCacheSize: configuration.proxy.tokenCacheSize,
                    userCacheSize: configuration.store.redis?.recordCacheSize ?? StoreConfiguration.Redis.defaultRecordCacheSize
                )
                accounts.signupsDisabled = configuration.users.disableSignup
                if let appleClient, let sealer {
                    accounts.appleRefreshTokens = AppleRefreshTokens(
                        client: appleClient, sealer: sealer, defaultClientID: configuration.providers.apple.audiences.first ?? "")
                }
                return accounts
            }
            if configuration.browserFlow.enabled, let accounts = self.accounts, let providerHTTPClient {
                self.browserFlow = BrowserFlowService(
                    configuration: configuration.browserFlow, store: store, accounts: accounts,
                    codes: AuthorizationCodeClient(http: providerHTTPClient, appleSecrets: appleClientSecrets), sealer: sealer,
                    discovery: discovery ?? OIDCDiscovery(fetcher: HTTPJWKSFetcher(client: providerHTTPClient)), logger: logger)
            } else {
                self.browserFlow = nil
            }
            let revocations = RevocationView(retention: RevocationView.retention(accessTokenTTL: configuration.tokens.accessTokenTTL))
            self.revocations = revocations
            if let memory = store as? MemoryAuthStore { memory.onRevocation { revocations.apply($0) } }
            if let accounts = self.accounts, let upstreamConnections, !configuration.routes.isEmpty {
                let authenticator = EdgeAuthenticator(
                    accounts: accounts,
                    view: revocations,
                    store: store,
                    maximumStaleness: store is MemoryAuthStore ? nil : configuration.proxy.revocationMaxStaleness.inSeconds
                )
                self.edge = EdgeProxy(configuration: configuration, authenticator: authenticator, connections: upstreamConnections)
                signingKeys?.onReplace { _ in authenticator.forgetVerifiedTokens() }
            } else {
                self.edge = nil
            }
        }
    }

    /// Dependencies plus the long-lived services behind them, in start order (they stop in
    /// reverse, after the HTTP server).
    public struct Assembly: Sendable {
        public let dependencies: Dependencies
        public let services: [any Service]
    }

    /// Builds everything `authgate serve` runs from a validated configuration: the store (and its
    /// Redis client), the signing keys, the HTTP client for provider keys, and one key set per
    /// enabled provider.
    /// - Throws: ``AuthGateError`` when the signing keys cannot be loaded.
    public static func assemble(_ configuration: AuthGateConfiguration, metrics: PrometheusCollectorRegistry? = nil, logger: Logger) throws
        -> Assembly
    {
        let keyRing = try SigningKeyRing.load(configuration.tokens, allowGenerated: configuration.isDevelopmentMode)
        let serverTLS = try configuration.server.tls.map { try ServerTLSContext(configuration: $0, http2: configuration.server.http2.enabled) }
        let store = AuthStoreFactory.make(configuration.store, accessTokenTTL: configuration.tokens.accessTokenTTL, logger: logger)
        let httpClient = HTTPClientService(client: HTTPClientService.makeKeyFetchingClient())
        let fetcher = HTTPJWKSFetcher(client: httpClient.client)
        // One cache of discovery documents for the key sets and the browser flow.
        let discovery = OIDCDiscovery(fetcher: fetcher)
        let verifiers = IdentityVerifierRegistry(providers: configuration.providers, fetcher: fetcher, discovery: discovery, logger: logger)
        let upstreamConnections = UpstreamConnectionPool(
            maxConnectionsPerUpstream: configuration.proxy.maxConnectionsPerUpstream, maxWebSocketTunnels: configuration.proxy.maxWebSocketTunnels,
            routes: configuration.routes)
        let dependencies = Dependencies(
            configuration: configuration, store: store.store, keyRing: keyRing, verifiers: verifiers, upstreamConnections: upstreamConnections,
            metrics: metrics, providerHTTPClient: httpClient.client, discovery: discovery, serverTLS: serverTLS, logger: logger
        )
        var services: [any Service] = store.services + [httpClient, upstreamConnections] + verifiers.keySets.map { $0 as any Service }
        services.append(ProviderRevocationWorker(store: store.store, revoker: dependencies.providerTokenRevoker, logger: logger))
        services.append(AuditFlusher(store: store.store, logger: logger))
        if let serverTLS { services.append(ServerTLSReloader(tls: serverTLS, logger: logger)) }
        if let metrics, configuration.server.metricsPort > 0 {
            let router = Router(options: .autoGenerateHeadEndpoints)
            MetricsController(registry: metrics).register(on: router)
            services.append(
                Application(
                    router: router,
                    configuration: .init(address: .hostname(configuration.server.host, port: configuration.server.metricsPort), serverName: nil),
                    logger: logger)
            )
        }
        if let redisStore = store.store as? RedisAuthStore {
            services.append(
                RevocationFeed(
                    configuration: redisStore.redis.configuration, keyPrefix: redisStore.keyPrefix, view: dependencies.revocations, logger: logger,
                    master: { [redis = redisStore.redis] in redis.announcedMaster })
            )
        }
        return Assembly(dependencies: dependencies, services: services)
    }

    /// The router with every route and middleware (its constant paths answered from a table,
    /// ``GatewayRouter``).
    public static func buildRouter(_ dependencies: Dependencies) -> GatewayRouter<AuthGateRequestContext> {
        let router = GatewayRouter(context: AuthGateRequestContext.self)
        // Outermost, so it adds its headers to every answer, errors included (already GoTrue-shaped).
        if !dependencies.configuration.server.corsAllowedOrigins.isEmpty {
            router.add(middleware: CORSPolicyMiddleware(origins: dependencies.configuration.server.corsAllowedOrigins))
        }
        router.add(middleware: RequestLogMiddleware(trustedProxies: dependencies.configuration.server.trustedProxies))
        if dependencies.configuration.tracing.enabled {
            router.add(middleware: TracingMiddleware<AuthGateRequestContext>())
        }
        if let metrics = dependencies.metrics, dependencies.configuration.server.metricsPort == 0 {
            MetricsController(registry: metrics).register(on: router)
        }
        let probe = ReadinessProbe(
            store: dependencies.store, keys: dependencies.signingKeys, keySets: dependencies.verifiers.keySets,
            appleClientSecrets: dependencies.appleClientSecrets, tls: dependencies.serverTLS, logger: dependencies.logger)
        HealthController(version: version, probe: probe).register(on: router)
        // Rate limits are attached to the endpoints themselves: they count what the router
        // resolved, however the path was spelled.
        let limits = dependencies.configuration.rateLimits
        func limited(_ bucket: String, _ limit: RateLimit?) -> RouterGroup<AuthGateRequestContext> {
            let group = router.group()
            if let limit {
                group.add(
                    middleware: RateLimitMiddleware(
                        bucket: bucket, limit: limit, store: dependencies.store, trustedProxies: dependencies.configuration.server.trustedProxies,
                        ipv6PrefixLength: limits.ipv6PrefixLength
                    )
                )
            }
            return group
        }
        NonceController(issuer: dependencies.nonces).register(on: limited("nonce", limits.nonce))
        if let keys = dependencies.signingKeys {
            JWKSController(keys: keys, issuer: dependencies.configuration.tokens.issuer).register(on: router)
        }
        if let accounts = dependencies.accounts {
            // Users' JSON text, kept for as many users as the store keeps decoded records.
            let userTexts = UserTextCache(
                capacity: dependencies.configuration.store.redis?.recordCacheSize ?? StoreConfiguration.Redis.defaultRecordCacheSize)
            TokenController(
                accounts: accounts, trustedProxies: dependencies.configuration.server.trustedProxies, users: userTexts,
                browserFlow: dependencies.browserFlow
            ).register(on: limited("token", limits.token))
            if let browserFlow = dependencies.browserFlow {
                // Each /authorize stores a flow for its lifetime: limited like the nonces, which do too.
                BrowserFlowController(
                    service: browserFlow, trustedProxies: dependencies.configuration.server.trustedProxies,
                    manualLinkingEnabled: dependencies.configuration.security.manualLinkingEnabled
                ).register(authorize: limited("authorize", limits.nonce), callback: limited("token", limits.token), accounts: accounts)
            }
            AppleAuthorizationCodeController(accounts: accounts, userUpdateLimit: limits.userUpdate, store: dependencies.store)
                .register(on: limited("token", limits.token))
            UserAccountController(accounts: accounts, configuration: dependencies.configuration).register(on: router)
            UserController(accounts: accounts, configuration: dependencies.configuration, store: dependencies.store, userTexts: userTexts)
                .register(on: router, signup: limited("signup", limits.signup))
            if let apple = (try? dependencies.verifiers.verifier(for: "apple")) as? AppleVerifier {
                AppleNotificationController(
                    service: AppleNotificationService(
                        verifier: apple, store: dependencies.store, selfDelete: dependencies.configuration.users.selfDelete,
                        logger: dependencies.logger)
                ).register(on: router)
            }
            AdminController(
                admin: AdminService(store: dependencies.store, logger: dependencies.logger), accounts: accounts,
                adminRoles: dependencies.configuration.tokens.adminRoles, users: dependencies.configuration.users
            ).register(on: router)
            AdminAuditController(store: dependencies.store, accounts: accounts, adminRoles: dependencies.configuration.tokens.adminRoles)
                .register(on: router)
        }
        // Last: it wraps only the not-found answer, for paths served with other methods.
        router.add(middleware: MethodNotAllowedMiddleware.make(for: router))
        return router
    }

    /// The application, ready to run in a `ServiceGroup` (or on its own with `runService()`).
    /// - Parameters:
    ///   - services: long-lived services that must run beside the server (the Redis client);
    ///     they start before it and stop after it.
    ///   - onServerRunning: called with the listening channel (tests read the port from it).
    public static func build(
        _ dependencies: Dependencies,
        services: [any Service] = [],
        logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let server = dependencies.configuration.server
        let responder = buildRouter(dependencies).buildResponder()
        return Application(
            responder: responder,
            server: serverBuilder(dependencies, logger: logger, router: responder),
            configuration: .init(address: .hostname(server.host, port: server.port), serverName: nil),
            services: services,
            onServerRunning: onServerRunning,
            logger: logger
        )
    }

    /// Every client connection's pipeline (``GatewayHTTPChannel``): the connection guard, HTTP/1.1,
    /// and ``GatewayConnectionHandler``, which normalizes and decides every request, serves
    /// the proxy routes itself and calls the router for requests with a small body; Hummingbird's
    /// channel serves the rest.
    /// - Parameters:
    ///   - logger: the logger of what the connection handler logs (access lines of proxied
    ///     requests among them).
    ///   - router: the application's router, called from the connection; nil builds one from
    ///     `dependencies` (``buildRouter(_:)``).
    public static func serverBuilder(
        _ dependencies: Dependencies, logger: Logger = Logger(label: "authgate"), router: (any HTTPResponder<AuthGateRequestContext>)? = nil
    ) -> HTTPServerBuilder {
        let configuration = dependencies.configuration
        let router = router ?? buildRouter(dependencies).buildResponder()
        return HTTPServerBuilder { responder in
            GatewayHTTPChannel(
                responder: responder, router: router, proxy: dependencies.edge, tls: dependencies.serverTLS, server: configuration.server,
                tracing: configuration.tracing.enabled,
                group: MultiThreadedEventLoopGroup.singleton, logger: logger
            )
        }
    }
}
