public import AuthGateCore
import Logging
public import NIOCore
public import NIOHTTP1
import Synchronization

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The edge proxy's shared parts, built once at start: the route table, each route's upstream
/// rotation, the authenticator and the upstream connections; and the one place a request head is
/// decided (``prepare(_:peer:)``). ``GatewayConnectionHandler`` carries the decision out, for
/// plain requests and WebSocket handshakes alike.
public final class EdgeProxy: Sendable {
    public let configuration: AuthGateConfiguration
    public let authenticator: EdgeAuthenticator
    /// Kept-alive connections to upstreams, per event loop.
    public let connections: UpstreamConnectionPool
    let table: RouteTable
    let pools: [UpstreamPool]
    /// Requests forwarded to an upstream (tests read it).
    let forwarded = Atomic<Int>(0)
    /// Each route's request metrics, made once.
    let routeMetrics: [GatewayMetrics.RouteRequests]
    /// The identity headers' names, made once.
    let identityNames: ProxyHeaders.IdentityNames

    public init(configuration: AuthGateConfiguration, authenticator: EdgeAuthenticator, connections: UpstreamConnectionPool) {
        self.configuration = configuration
        self.authenticator = authenticator
        self.connections = connections
        self.table = RouteTable(configuration.routes)
        self.pools = configuration.routes.map { UpstreamPool($0.upstreams) }
        self.routeMetrics = configuration.routes.map { GatewayMetrics.RouteRequests(route: $0.name) }
        self.identityNames = ProxyHeaders.IdentityNames(prefix: configuration.proxy.identityHeaderPrefix)
    }

    // MARK: The decision

    /// Decides a request head from `peer`: normalizes its target and host, checks its framing,
    /// matches a route, applies the route's policy to the token and picks an upstream, each once.
    /// Never waits: when the revocation feed is too stale to trust, the store's answer is asked
    /// for through ``ProxyDecision/checkRevocation(_:)``.
    public func prepare(_ head: HTTPRequestHead, peer: SocketAddress?, now: Date = Date()) -> ProxyDecision {
        Self.decide(head, facts: RequestHeadFacts(head.headers), peerAddress: peer?.ipAddress, proxy: self, now: now)
    }

    /// The decision for a head when there may be no proxy (no routes): what every request meets.
    /// `facts` are the head's header facts, read once by the caller.
    /// `peerAddress` is the TCP peer's address text, made once per connection. `headerListLimit`
    /// is `server.http2.max_header_list_size` for an HTTP/2 stream (enforced here whether or not
    /// the client has acknowledged the setting), nil for HTTP/1.1, whose decoder has its own.
    static func decide(
        _ head: HTTPRequestHead, facts: RequestHeadFacts, peerAddress: String?, proxy: EdgeProxy?, now: Date, headerListLimit: Int? = nil
    ) -> ProxyDecision {
        // The proxy's context of the request, made only for a refusal or a route: the router
        // gives AuthGate's own endpoints their request id.
        var path = ""
        func context() -> ProxyRequestContext {
            ProxyRequestContext(
                method: head.method, path: path, version: head.version,
                requestID: RequestLogMiddleware.acceptableRequestID(facts.requestID) ?? RequestLogMiddleware.newRequestID(),
                routeName: nil, routeIndex: nil, userID: nil, apiVersion: facts.apiVersion, keepAlive: facts.keepsAlive(head),
                hasBody: facts.hasBody
            )
        }
        func badRequest(_ reason: String, _ message: String) -> ProxyDecision {
            .refuse(
                ProxyRefusal(.badRequest, code: "validation_failed", message: message, reason: reason, closesConnection: true, context: context()))
        }
        if let headerListLimit, facts.listSize > headerListLimit {
            return .refuse(
                ProxyRefusal(
                    .requestHeaderFieldsTooLarge, code: "request_header_fields_too_large", message: "Request header fields too large",
                    reason: "header_list_too_large", closesConnection: true, context: context())
            )
        }
        let target: RequestTarget
        do {
            target = try RequestTarget.normalize(head.uri)
        } catch {
            path = Self.loggedPath(head.uri)
            if error == .tooLong {
                return .refuse(
                    ProxyRefusal(
                        .uriTooLong, code: "validation_failed", message: "Request target too long", reason: "target_too_long", closesConnection: true,
                        context: context())
                )
            }
            return badRequest(error.rawValue, "Invalid request target")
        }
        path = target.path
        if let problem = facts.framingProblem(version: head.version) { return badRequest(problem, "Ambiguous request framing") }
        if facts.hostCount > 1 {
            // On HTTP/2, also a `host` field that differs from `:authority` (HTTP2AuthorityHostCheck).
            let message = head.version.major >= 2 ? "More than one host: Host differs from :authority, or is repeated" : "More than one Host header"
            return badRequest("several_hosts", message)
        }
        // The credentials are decided on once: with two, the gateway would check one and an
        // upstream given both (forward_authorization) might act on the other.
        if facts.authorizationCount > 1 { return badRequest("several_authorizations", "More than one Authorization header") }
        if facts.isWebSocketHandshake, facts.subprotocolBearerCount > 1 || (facts.subprotocolBearerCount == 1 && facts.authorizationCount > 0) {
            return badRequest("several_authorizations", "More than one credential: an Authorization header and a bearer subprotocol, or two of them")
        }
        if facts.hostCount == 0, target.authority == nil, head.version.isAtLeastHTTP11 { return badRequest("missing_host", "Missing Host header") }
        let host: String?
        if let authority = target.authority ?? facts.host {
            guard let canonical = HostName.canonical(authority) else { return badRequest("invalid_host", "Invalid Host header") }
            host = canonical
        } else {
            host = nil
        }
        /// A CORS preflight asks about another method: a route with `cors` limited to that method
        /// answers it (its `methods` need not list OPTIONS).
        func preflightRoute() -> RouteTable.Route? {
            guard head.method == .OPTIONS, facts.origin != nil, let requested = facts.corsRequestMethod,
                let route = proxy?.route(host: host, path: target.path, method: requested.uppercased()), route.configuration.cors != nil
            else { return nil }
            return route
        }
        if head.method == .CONNECT {
            return .refuse(
                ProxyRefusal(
                    .methodNotAllowed, code: "method_not_allowed", message: "CONNECT is not supported", reason: "connect_method",
                    closesConnection: true, context: context())
            )
        }
        guard let proxy, let route = proxy.route(host: host, path: target.path, method: head.method.rawValue) ?? preflightRoute() else {
            // Over HTTP/1.1 AuthGate's own endpoints answer an upgrade as any request and the
            // connection closes after it; over HTTP/2 a 2xx to an extended CONNECT would tell
            // the client a tunnel is open (HTTP2WebSocketStream).
            if facts.isUpgrade, head.version.major >= 2 {
                return badRequest("unsupported_upgrade", "Only a WebSocket on a proxied route can be opened over HTTP/2")
            }
            var application = head
            if application.uri != target.uri { application.uri = target.uri }
            if let authority = target.authority { application.headers.replaceOrAdd(name: "Host", value: authority) }
            return .application(application)
        }
        return proxy.decide(head, facts: facts, target: target, route: route, context: context(), peerAddress: peerAddress, now: now)
    }

    /// The CORS headers of every answer to an allowed origin (`allowedOrigin`: the value of
    /// `Access-Control-Allow-Origin`); none for another origin, but `Vary: Origin` whenever the
    /// answer depends on it, so that no cache hands one origin's answer to another.
    static func corsHeaders(_ cors: RouteCORSConfiguration, allowedOrigin: String?) -> [(String, String)] {
        var headers: [(String, String)] = cors.allowedOrigins == ["*"] ? [] : [("Vary", "Origin")]
        guard let allowedOrigin else { return headers }
        headers.append(("Access-Control-Allow-Origin", allowedOrigin))
        if cors.allowCredentials { headers.append(("Access-Control-Allow-Credentials", "true")) }
        if !cors.exposeHeaders.isEmpty { headers.append(("Access-Control-Expose-Headers", cors.exposeHeaders.joined(separator: ", "))) }
        return headers
    }

    /// The decision for a request that matched `route`.
    private func decide(
        _ head: HTTPRequestHead, facts: RequestHeadFacts, target: RequestTarget, route: RouteTable.Route, context: ProxyRequestContext,
        peerAddress: String?,
        now: Date
    ) -> ProxyDecision {
        var context = context
        context.routeName = route.configuration.name
        context.routeIndex = route.index
        let configuration = route.configuration
        if let cors = configuration.cors {
            let allowed = facts.origin.flatMap(cors.allowedOriginValue(for:))
            context.cors = Self.corsHeaders(cors, allowedOrigin: allowed)
            if head.method == .OPTIONS, facts.origin != nil, facts.corsRequestMethod != nil {
                // A preflight: answered here, before any token is asked for (browsers send none).
                // The answer carries the request's CORS headers as every answer does, and for an
                // allowed origin what the preflight asked.
                let headers: [(String, String)] =
                    allowed == nil
                    ? []
                    : [
                        ("Access-Control-Allow-Methods", cors.allowedMethods.joined(separator: ", ")),
                        ("Access-Control-Allow-Headers", cors.allowedHeaders.joined(separator: ", ")),
                        ("Access-Control-Max-Age", String(cors.maxAge.components.seconds))
                    ]
                return .refuse(
                    ProxyRefusal(
                        .noContent, code: "", message: "", reason: allowed == nil ? "cors_origin_not_allowed" : "cors_preflight",
                        headers: headers, context: context)
                )
            }
        }
        if let length = facts.contentLength, length > configuration.maxBody {
            return .refuse(
                ProxyRefusal(
                    .payloadTooLarge, code: "request_entity_too_large", message: "Request body too large", reason: "body_too_large",
                    closesConnection: true, context: context)
            )
        }
        if facts.isUpgrade, !facts.upgradesToWebSocket || head.method != .GET || context.hasBody {
            return .refuse(
                ProxyRefusal(
                    .badRequest, code: "validation_failed", message: "Only a WebSocket upgrade with GET can be proxied",
                    reason: "unsupported_upgrade",
                    closesConnection: true, context: context)
            )
        }
        switch authenticator.authorizeFromMemory(bearer: facts.bearer, route: configuration, now: now) {
        case .decided(let decision):
            return plan(decision, head: head, facts: facts, target: target, route: route, context: context, peerAddress: peerAddress)
        case .needsStore(let claims):
            let context = context
            return .checkRevocation(
                PendingAuthorization(
                    claims: claims,
                    resume: { [self] claims in
                        plan(.allow(claims), head: head, facts: facts, target: target, route: route, context: context, peerAddress: peerAddress)
                    }, context: context)
            )
        }
    }

    /// Finishes a decision that waited for the store: forwarded, or refused when the session is
    /// gone (401) or the store cannot say (503).
    public func completeAuthorization(_ pending: PendingAuthorization) async -> ProxyDecision {
        guard let route = pending.context.routeName.flatMap({ name in configuration.routes.first { $0.name == name } }) else {
            return .refuse(Self.refusal(.unavailable(reason: "route vanished"), context: pending.context))
        }
        switch await authenticator.checkStore(pending.claims, route: route) {
        case .allow(let claims?):
            return pending.resume(claims)
        case let decision:
            return .refuse(Self.refusal(decision, context: pending.context))
        }
    }

    private func plan(
        _ decision: EdgeAuthenticator.Decision, head: HTTPRequestHead, facts: RequestHeadFacts, target: RequestTarget, route: RouteTable.Route,
        context: ProxyRequestContext, peerAddress: String?
    ) -> ProxyDecision {
        var context = context
        guard case .allow(let claims) = decision else { return .refuse(Self.refusal(decision, context: context)) }
        context.userID = claims?.sub
        let pool = pools[route.index]
        guard let index = pool.nextIndex() else {
            return .refuse(
                ProxyRefusal(.badGateway, code: "bad_gateway", message: "The upstream could not be reached", reason: "no_upstream", context: context)
            )
        }
        let member = pool.members[index]
        let client = ClientAddress.resolve(head.headers, peerAddress: peerAddress, trustedProxies: configuration.server.trustedProxies)
        var headers = ProxyHeaders.upstreamHeaders(
            from: head.headers, claims: claims, route: route.configuration, identity: identityNames,
            clientAddress: client.address, peerIsTrusted: client.peerIsTrusted, scheme: configuration.server.tls == nil ? "http" : "https",
            authority: facts.host,
            requestID: context.requestID
        )
        let isWebSocket = facts.isWebSocketHandshake
        if isWebSocket {
            headers.add(name: "Connection", value: "Upgrade")
            headers.add(name: "Upgrade", value: "websocket")
            // A token that came as a subprotocol goes on as the header it stands for.
            if route.configuration.forwardAuthorization, facts.authorizationCount == 0, let token = facts.subprotocolBearer {
                headers.add(name: "Authorization", value: "Bearer " + token)
            }
        } else if context.hasBody, facts.contentLengthCount == 0 {
            // The body streams as it comes; its length is not known (chunked, checked above).
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        headers.add(name: "Host", value: member.hostHeader)
        return .forward(
            ProxyPlan(
                route: route, claims: claims, target: target, context: context, upstream: member.upstream, upstreamIndex: index, headers: headers,
                idempotent: [.GET, .HEAD, .OPTIONS, .PUT, .DELETE, .TRACE].contains(head.method), isWebSocket: isWebSocket,
                answersGatewaySubprotocol: isWebSocket && facts.offersGatewaySubprotocol,
                expectsContinue: context.hasBody && head.version.isAtLeastHTTP11 && facts.expectsContinue
            )
        )
    }

    /// A refusal of the route's policy, in GoTrue's words.
    static func refusal(_ decision: EdgeAuthenticator.Decision, context: ProxyRequestContext) -> ProxyRefusal {
        switch decision {
        case .allow:
            ProxyRefusal(.internalServerError, code: "unexpected_failure", message: "Unexpected failure", reason: "no_claims", context: context)
        case .unauthorized(let reason):
            ProxyRefusal(
                .unauthorized, code: "no_authorization", message: "A valid access token is required", reason: reason,
                headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")], context: context
            )
        case .forbidden(let reason):
            ProxyRefusal(.forbidden, code: "not_admin", message: "This route does not allow this user", reason: reason, context: context)
        case .unavailable(let reason):
            ProxyRefusal(
                .serviceUnavailable, code: "unexpected_failure", message: "Authentication is temporarily unavailable", reason: reason,
                context: context)
        }
    }

    // MARK: Routes and upstreams

    /// The route serving a normalized request, or nil when AuthGate answers it itself or no route matches.
    func route(host: String?, path: String, method: String) -> RouteTable.Route? {
        guard !table.isEmpty, !Self.isGatewayPath(path) else { return nil }
        return table.match(host: host, path: path, method: method)
    }

    /// `plan` moved to the next upstream of its route other than the one it used (a retry), or
    /// nil when there is no other.
    func planOnOtherUpstream(_ plan: ProxyPlan) -> ProxyPlan? {
        let pool = pools[plan.route.index]
        guard let index = pool.nextIndex(excluding: plan.upstreamIndex) else { return nil }
        var moved = plan
        moved.use(pool.members[index].upstream, index: index, hostHeader: pool.members[index].hostHeader)
        return moved
    }

    func markFailed(_ plan: ProxyPlan) {
        pools[plan.route.index].markFailed(plan.upstreamIndex)
    }

    func markHealthy(_ plan: ProxyPlan) {
        pools[plan.route.index].markHealthy(plan.upstreamIndex)
    }

    /// The `Host` an upstream receives: its own name, with the port unless it is the scheme's default.
    static func hostHeader(_ upstream: RouteConfiguration.Upstream) -> String {
        let host = upstream.host.contains(":") ? "[\(upstream.host)]" : upstream.host
        let defaultPort = upstream.scheme == "https" ? 443 : 80
        return upstream.port == defaultPort ? host : "\(host):\(upstream.port)"
    }

    /// Paths AuthGate serves itself; never proxied.
    static func isGatewayPath(_ path: String) -> Bool {
        path == "/auth/v1" || path.hasPrefix("/auth/v1/") || path == "/health" || path == "/readyz" || path.hasPrefix("/.well-known/")
    }

    // MARK: Request facts

    /// The path part of a raw target, bounded, for log lines about targets that were refused.
    static func loggedPath(_ uri: String) -> String {
        let path = uri.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(uri[..<$0]) } ?? uri
        return path.utf8.count <= 256 ? path : String(path.prefix(256)) + "…"
    }
}

extension HTTPVersion {
    /// HTTP/1.1 or later (HTTP/1.0 needs no `Host`, knows no `Expect` and no `Transfer-Encoding`).
    var isAtLeastHTTP11: Bool { major > 1 || (major == 1 && minor >= 1) }
}
