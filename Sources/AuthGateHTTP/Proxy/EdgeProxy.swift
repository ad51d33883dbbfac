#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import AuthGateCore
public import HTTPTypes
import Logging
import Synchronization
public import NIOCore
public import NIOHTTP1

/// The edge proxy's shared parts, built once at start: the route table, each route's upstream
/// pool, the authenticator and the upstream connections. The HTTP middleware
/// (``EdgeProxyMiddleware``) and the WebSocket upgrader (``WebSocketProxy``) both use it.
public final class EdgeProxy: Sendable {
    public let configuration: AuthGateConfiguration
    public let authenticator: EdgeAuthenticator
    /// Kept-alive connections plain HTTP requests are forwarded on.
    public let connections: UpstreamConnectionPool
    let table: RouteTable
    let pools: [UpstreamPool]
    /// Requests ``ProxyFastPathHandler`` served itself.
    let fastPathServed = Atomic<Int>(0)

    public init(configuration: AuthGateConfiguration, authenticator: EdgeAuthenticator, connections: UpstreamConnectionPool) {
        self.configuration = configuration
        self.authenticator = authenticator
        self.connections = connections
        self.table = RouteTable(configuration.routes)
        self.pools = configuration.routes.map { UpstreamPool($0.upstreams) }
    }

    /// The route serving a request, or nil when AuthGate answers it itself or no route matches.
    func route(host: String?, path: String, method: String) -> RouteTable.Route? {
        guard !table.isEmpty, !Self.isGatewayPath(path) else { return nil }
        return table.match(host: host, path: path, method: method)
    }

    /// Applies the route's policy to the request's bearer token.
    /// - Returns: the caller's claims (nil on an `optional` or `public` route without a token).
    /// - Throws: ``GoTrueError`` 401 (with `WWW-Authenticate`), 403 or 503.
    func authorize(bearer: String?, route: RouteConfiguration, logger: Logger, outcome: RequestOutcome? = nil) async throws -> AccessTokenClaims? {
        let decision = await authenticator.authorize(bearer: bearer, route: route, now: Date())
        switch decision {
        case .allow(let claims): outcome?.userID = claims?.sub
        case .unauthorized(let reason), .forbidden(let reason), .unavailable(let reason): outcome?.reason = reason
        }
        switch decision {
        case .allow(let claims):
            return claims
        case .unauthorized(let reason):
            logger.info("proxy refused", metadata: ["gw.outcome": "unauthorized", "gw.reason": "\(reason)"])
            throw GoTrueError(
                .unauthorized, code: "no_authorization", message: "A valid access token is required",
                headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]
            )
        case .forbidden(let reason):
            logger.info("proxy refused", metadata: ["gw.outcome": "forbidden", "gw.reason": "\(reason)"])
            throw GoTrueError(.forbidden, code: "not_admin", message: "This route does not allow this user")
        case .unavailable(let reason):
            logger.error("proxy refused", metadata: ["gw.outcome": "unavailable", "gw.reason": "\(reason)"])
            throw GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "Authentication is temporarily unavailable")
        }
    }

    /// The headers an upstream receives for a request with `fields` from `peer` (see
    /// ``ProxyHeaders/upstreamHeaders(from:claims:route:identityPrefix:clientAddress:peerIsTrusted:scheme:authority:requestID:)``).
    func upstreamHeaders(
        _ fields: HTTPFields, claims: AccessTokenClaims?, route: RouteConfiguration, peer: SocketAddress?, authority: String?, requestID: String
    ) -> HTTPHeaders {
        let client = ClientAddress.resolve(fields, peer: peer, trustedProxies: configuration.server.trustedProxies)
        return ProxyHeaders.upstreamHeaders(
            from: fields, claims: claims, route: route, identityPrefix: configuration.proxy.identityHeaderPrefix,
            clientAddress: client.address, peerIsTrusted: client.peerIsTrusted, scheme: "http", authority: authority, requestID: requestID
        )
    }

    /// The request head an upstream receives: the route's upstream path (prefix stripped or base
    /// prepended), the query as the client sent it, the proxied `headers`, and `Host` naming the upstream.
    static func upstreamHead(
        method: HTTPMethod, path: String, query: Substring?, route: RouteConfiguration, upstream: RouteConfiguration.Upstream, headers: HTTPHeaders
    ) -> HTTPRequestHead {
        let upstreamPath = RouteTable.upstreamPath(for: path, route: route, upstream: upstream)
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: query.map { upstreamPath + "?" + $0 } ?? upstreamPath, headers: headers)
        head.headers.replaceOrAdd(name: "Host", value: hostHeader(upstream))
        return head
    }

    /// The `Host` an upstream receives: its own name, with the port unless it is the scheme's default.
    static func hostHeader(_ upstream: RouteConfiguration.Upstream) -> String {
        let host = upstream.host.contains(":") ? "[\(upstream.host)]" : upstream.host
        let defaultPort = upstream.scheme == "https" ? 443 : 80
        return upstream.port == defaultPort ? host : "\(host):\(upstream.port)"
    }

    /// The upstream URL for `path` and `query` on `route`; `scheme` replaces the upstream's
    /// (`ws`/`wss` for WebSocket).
    static func url(_ upstream: RouteConfiguration.Upstream, route: RouteConfiguration, path: String, query: String?, scheme: String? = nil) -> String {
        let host = upstream.host.contains(":") ? "[\(upstream.host)]" : upstream.host
        var url = "\(scheme ?? upstream.scheme)://\(host):\(upstream.port)\(RouteTable.upstreamPath(for: path, route: route, upstream: upstream))"
        if let query, !query.isEmpty { url += "?" + query }
        return url
    }

    /// Paths AuthGate serves itself; never proxied.
    static func isGatewayPath(_ path: String) -> Bool {
        path == "/auth/v1" || path.hasPrefix("/auth/v1/") || path == "/health" || path == "/readyz" || path.hasPrefix("/.well-known/")
    }
}
