#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import AuthGateCore
import Logging
import Synchronization
public import NIOCore
public import NIOHTTP1

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

    public init(configuration: AuthGateConfiguration, authenticator: EdgeAuthenticator, connections: UpstreamConnectionPool) {
        self.configuration = configuration
        self.authenticator = authenticator
        self.connections = connections
        self.table = RouteTable(configuration.routes)
        self.pools = configuration.routes.map { UpstreamPool($0.upstreams) }
    }

    // MARK: The decision

    /// Decides a request head from `peer`: normalizes its target and host, checks its framing,
    /// matches a route, applies the route's policy to the token and picks an upstream, each once.
    /// Never waits: when the revocation feed is too stale to trust, the store's answer is asked
    /// for through ``ProxyDecision/checkRevocation(_:)``.
    public func prepare(_ head: HTTPRequestHead, peer: SocketAddress?, now: Date = Date()) -> ProxyDecision {
        Self.decide(head, peer: peer, proxy: self, now: now)
    }

    /// The decision for a head when there may be no proxy (no routes): what every request meets.
    static func decide(_ head: HTTPRequestHead, peer: SocketAddress?, proxy: EdgeProxy?, now: Date) -> ProxyDecision {
        let hasBody = Self.hasBody(head.headers)
        let keepAlive = head.isKeepAlive && !Self.isUpgradeRequest(head)
        var context = ProxyRequestContext(
            method: head.method, path: Self.loggedPath(head.uri), version: head.version,
            requestID: RequestLogMiddleware.acceptableRequestID(head.headers.first(name: "X-Request-Id")) ?? RequestLogMiddleware.newRequestID(),
            routeName: nil, userID: nil, apiVersion: head.headers.first(name: "X-Supabase-Api-Version"), keepAlive: keepAlive, hasBody: hasBody
        )
        func badRequest(_ reason: String, _ message: String) -> ProxyDecision {
            .refuse(ProxyRefusal(.badRequest, code: "validation_failed", message: message, reason: reason, closesConnection: true, context: context))
        }
        let target: RequestTarget
        do {
            target = try RequestTarget.normalize(head.uri)
        } catch .tooLong {
            return .refuse(
                ProxyRefusal(.uriTooLong, code: "validation_failed", message: "Request target too long", reason: "target_too_long", closesConnection: true, context: context)
            )
        } catch {
            return badRequest(error.rawValue, "Invalid request target")
        }
        context.path = target.path
        if let problem = Self.framingProblem(head.headers) { return badRequest(problem, "Ambiguous request framing") }
        let hosts = head.headers["Host"]
        if hosts.count > 1 { return badRequest("several_hosts", "More than one Host header") }
        if hosts.isEmpty, target.authority == nil, head.version.isAtLeastHTTP11 { return badRequest("missing_host", "Missing Host header") }
        let host: String?
        if let authority = target.authority ?? hosts.first {
            guard let canonical = HostName.canonical(authority) else { return badRequest("invalid_host", "Invalid Host header") }
            host = canonical
        } else {
            host = nil
        }
        if head.method == .CONNECT {
            return .refuse(
                ProxyRefusal(.methodNotAllowed, code: "method_not_allowed", message: "CONNECT is not supported", reason: "connect_method", closesConnection: true, context: context)
            )
        }
        var application = head
        application.uri = target.uri
        if let authority = target.authority { application.headers.replaceOrAdd(name: "Host", value: authority) }
        guard let proxy, let route = proxy.route(host: host, path: target.path, method: head.method.rawValue) else {
            return .application(application)
        }
        return proxy.decide(head, target: target, route: route, context: context, peer: peer, now: now)
    }

    /// The decision for a request that matched `route`.
    private func decide(_ head: HTTPRequestHead, target: RequestTarget, route: RouteTable.Route, context: ProxyRequestContext, peer: SocketAddress?, now: Date)
        -> ProxyDecision
    {
        var context = context
        context.routeName = route.configuration.name
        let configuration = route.configuration
        if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > configuration.maxBody {
            return .refuse(
                ProxyRefusal(.payloadTooLarge, code: "request_entity_too_large", message: "Request body too large", reason: "body_too_large", closesConnection: true, context: context)
            )
        }
        let isWebSocket = Self.isWebSocketUpgrade(head)
        if Self.isUpgradeRequest(head), !isWebSocket || head.method != .GET || context.hasBody {
            return .refuse(
                ProxyRefusal(.badRequest, code: "validation_failed", message: "Only a WebSocket upgrade with GET can be proxied", reason: "unsupported_upgrade",
                    closesConnection: true, context: context)
            )
        }
        let bearer = head.headers.first(name: "Authorization").flatMap(RequestSupport.bearerToken(authorization:))
        switch authenticator.authorizeFromMemory(bearer: bearer, route: configuration, now: now) {
        case .decided(let decision):
            return plan(decision, head: head, target: target, route: route, context: context, peer: peer)
        case .needsStore(let claims):
            let context = context
            return .checkRevocation(
                PendingAuthorization(claims: claims, resume: { [self] claims in
                    plan(.allow(claims), head: head, target: target, route: route, context: context, peer: peer)
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
        _ decision: EdgeAuthenticator.Decision, head: HTTPRequestHead, target: RequestTarget, route: RouteTable.Route, context: ProxyRequestContext,
        peer: SocketAddress?
    ) -> ProxyDecision {
        var context = context
        guard case .allow(let claims) = decision else { return .refuse(Self.refusal(decision, context: context)) }
        context.userID = claims?.sub
        guard let (index, upstream) = pools[route.index].next() else {
            return .refuse(
                ProxyRefusal(.badGateway, code: "bad_gateway", message: "The upstream could not be reached", reason: "no_upstream", context: context)
            )
        }
        let client = ClientAddress.resolve(head.headers, peer: peer, trustedProxies: configuration.server.trustedProxies)
        var headers = ProxyHeaders.upstreamHeaders(
            from: head.headers, claims: claims, route: route.configuration, identityPrefix: configuration.proxy.identityHeaderPrefix,
            clientAddress: client.address, peerIsTrusted: client.peerIsTrusted, scheme: "http", authority: head.headers.first(name: "Host"),
            requestID: context.requestID
        )
        let isWebSocket = Self.isWebSocketUpgrade(head)
        if isWebSocket {
            headers.add(name: "Connection", value: "Upgrade")
            headers.add(name: "Upgrade", value: "websocket")
        } else if context.hasBody, !head.headers.contains(name: "Content-Length") {
            // The body streams as it comes; its length is not known (chunked, checked by framingProblem).
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        return .forward(
            ProxyPlan(
                route: route, claims: claims, target: target, context: context, upstream: upstream, upstreamIndex: index, headers: headers,
                idempotent: [.GET, .HEAD, .OPTIONS, .PUT, .DELETE, .TRACE].contains(head.method), isWebSocket: isWebSocket,
                expectsContinue: context.hasBody && head.version.isAtLeastHTTP11
                    && head.headers["Expect"].contains { $0.trimmingOWS.lowercased() == "100-continue" }
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
            ProxyRefusal(.serviceUnavailable, code: "unexpected_failure", message: "Authentication is temporarily unavailable", reason: reason, context: context)
        }
    }

    // MARK: Routes and upstreams

    /// The route serving a normalized request, or nil when AuthGate answers it itself or no route matches.
    func route(host: String?, path: String, method: String) -> RouteTable.Route? {
        guard !table.isEmpty, !Self.isGatewayPath(path) else { return nil }
        return table.match(host: host, path: path, method: method)
    }

    /// The next upstream of `plan`'s route other than the one it used (a retry).
    func otherUpstream(for plan: ProxyPlan) -> (index: Int, upstream: RouteConfiguration.Upstream)? {
        pools[plan.route.index].next(excluding: plan.upstreamIndex)
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

    /// Body parts follow the head: a `Content-Length` over 0, or a transfer coding.
    static func hasBody(_ headers: HTTPHeaders) -> Bool {
        if headers.contains(name: "Transfer-Encoding") { return true }
        guard let length = headers.first(name: "Content-Length") else { return false }
        return length != "0"
    }

    /// The head asks to switch protocols (NIO's decoder stops parsing after such a request, so
    /// the connection cannot carry another).
    static func isUpgradeRequest(_ head: HTTPRequestHead) -> Bool {
        guard head.headers.contains(name: "Upgrade") else { return false }
        return head.headers["Connection"].contains { $0.split(separator: ",").contains { $0.trimmingOWS.lowercased() == "upgrade" } }
    }

    /// An upgrade to WebSocket.
    static func isWebSocketUpgrade(_ head: HTTPRequestHead) -> Bool {
        isUpgradeRequest(head) && head.headers["Upgrade"].contains { $0.split(separator: ",").contains { $0.trimmingOWS.lowercased() == "websocket" } }
    }

    /// Why a request's body length is ambiguous, or nil. NIO's parser already refuses
    /// `Content-Length` with `Transfer-Encoding`, repeated or listed `Content-Length`, and
    /// obs-fold; this adds what it lets through: a transfer coding other than exactly `chunked`
    /// (RFC 9112 §6.3: the length cannot be determined), and a `Content-Length` that is not a
    /// plain number.
    static func framingProblem(_ headers: HTTPHeaders) -> String? {
        let codings = headers["Transfer-Encoding"].flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS.lowercased() }
        let lengths = headers["Content-Length"]
        if !codings.isEmpty {
            guard codings == ["chunked"] else { return "transfer_coding_not_chunked" }
            guard lengths.isEmpty else { return "length_and_transfer_coding" }
        }
        if lengths.count > 1 { return "several_content_lengths" }
        if let length = lengths.first, length.isEmpty || length.utf8.count > 18 || !length.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            return "content_length_not_a_number"
        }
        return nil
    }

    /// The path part of a raw target, bounded, for log lines about targets that were refused.
    static func loggedPath(_ uri: String) -> String {
        let path = uri.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(uri[..<$0]) } ?? uri
        return path.utf8.count <= 256 ? path : String(path.prefix(256)) + "…"
    }
}

extension HTTPVersion {
    /// HTTP/1.1 or later (HTTP/1.0 needs no `Host` and knows no `Expect`).
    var isAtLeastHTTP11: Bool { major > 1 || (major == 1 && minor >= 1) }
}
