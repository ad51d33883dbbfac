public import AuthGateCore
import NIOCore
public import NIOHTTP1

/// What the gateway does with one request head, decided once (``EdgeProxy/prepare(_:peer:)``) on
/// the request's normalized form. Everything the request then meets (routing, policy, the
/// upstream, the access log) reads this decision; nothing decides again.
public enum ProxyDecision: Sendable {
    /// Not for a proxy route: Hummingbird serves it (the GoTrue API, health, a 404). The head's
    /// target is the normalized one.
    case application(HTTPRequestHead)
    /// Answered by the gateway at once; nothing is forwarded.
    case refuse(ProxyRefusal)
    /// Forwarded as planned.
    case forward(ProxyPlan)
    /// The token checks out but the revocation feed is behind: the store decides, then the
    /// request is forwarded or refused (``EdgeProxy/completeAuthorization(_:)``).
    case checkRevocation(PendingAuthorization)
}

/// A request the gateway answers itself, with GoTrue's error shape.
public struct ProxyRefusal: Sendable, Error {
    public let status: HTTPResponseStatus
    /// GoTrue's stable error code (`no_authorization`, `validation_failed`, …).
    public let code: String
    /// The client-facing text, from a fixed table: never internal detail.
    public let message: String
    /// The stable reason logged on the access line (`session_revoked`, `encoded_separator`, …).
    public let reason: String
    /// `WWW-Authenticate` and the like.
    public let headers: [(String, String)]
    /// The client connection closes after the answer (the framing cannot be trusted, or the
    /// decoder has stopped).
    public let closesConnection: Bool
    /// The request's facts, for the access line and the body's draining.
    public var context: ProxyRequestContext

    init(
        _ status: HTTPResponseStatus, code: String, message: String, reason: String, headers: [(String, String)] = [],
        closesConnection: Bool = false, context: ProxyRequestContext
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.reason = reason
        self.headers = headers
        self.closesConnection = closesConnection
        self.context = context
    }
}

/// What every decision knows of its request, for answering and logging it.
public struct ProxyRequestContext: Sendable {
    public let method: HTTPMethod
    /// The normalized path when the target could be normalized, else the raw one (logs only).
    public var path: String
    public let version: HTTPVersion
    public let requestID: String
    /// The route's name, or nil before a route matched.
    public var routeName: String?
    /// The route's index in the configuration, or nil before a route matched.
    public var routeIndex: Int?
    public var userID: String?
    /// The `X-Supabase-Api-Version` the client sent (it picks the error body's shape).
    public let apiVersion: String?
    /// The client may send another request on the connection after this one.
    public let keepAlive: Bool
    /// Body parts follow the head.
    public let hasBody: Bool
    /// On a route with `cors`, the CORS headers every answer to this request carries (empty for
    /// an origin that is not allowed, or no `Origin`); nil on a route without `cors`.
    public var cors: [(String, String)]? = nil
}

/// A request to forward: everything the exchange needs, computed once.
public struct ProxyPlan: Sendable {
    public let route: RouteTable.Route
    /// The caller's claims (nil on an `optional` or `public` route without a token).
    public let claims: AccessTokenClaims?
    public let target: RequestTarget
    public var context: ProxyRequestContext
    /// The upstream chosen by the route's rotation, and its index there.
    public private(set) var upstream: RouteConfiguration.Upstream
    public private(set) var upstreamIndex: Int
    /// The headers the upstream receives, `Host` naming the upstream included.
    private(set) var headers: HTTPHeaders
    /// The method may be sent twice (a connect failure retries it elsewhere).
    let idempotent: Bool
    /// A WebSocket handshake: forwarded on a connection of its own, which becomes a tunnel.
    let isWebSocket: Bool
    /// The client offered the `authgate` subprotocol: the `101` names it when the upstream chose
    /// none (``WebSocketSubprotocolCredential``).
    let answersGatewaySubprotocol: Bool
    /// The client sent `Expect: 100-continue`: the gateway answers `100 Continue` itself once it
    /// decided to forward the body.
    let expectsContinue: Bool

    init(
        route: RouteTable.Route, claims: AccessTokenClaims?, target: RequestTarget, context: ProxyRequestContext,
        upstream: RouteConfiguration.Upstream,
        upstreamIndex: Int, headers: HTTPHeaders, idempotent: Bool, isWebSocket: Bool, answersGatewaySubprotocol: Bool,
        expectsContinue: Bool
    ) {
        self.route = route
        self.claims = claims
        self.target = target
        self.context = context
        self.upstream = upstream
        self.upstreamIndex = upstreamIndex
        self.headers = headers
        self.idempotent = idempotent
        self.isWebSocket = isWebSocket
        self.answersGatewaySubprotocol = answersGatewaySubprotocol
        self.expectsContinue = expectsContinue
    }

    /// Moves the plan to another of the route's upstreams (a retry).
    mutating func use(_ upstream: RouteConfiguration.Upstream, index: Int, hostHeader: String) {
        self.upstream = upstream
        self.upstreamIndex = index
        headers.replaceOrAdd(name: "Host", value: hostHeader)
    }

    /// The head the upstream receives: the route's upstream path for the normalized target, the
    /// query as sent, the proxied headers and `Host` naming the upstream.
    public var upstreamHead: HTTPRequestHead {
        let path = RouteTable.upstreamPath(for: target.path, route: route.configuration, upstream: upstream)
        return HTTPRequestHead(version: .http1_1, method: context.method, uri: target.query.map { path + "?" + $0 } ?? path, headers: headers)
    }
}

/// A plan waiting for the store's word on a session (the revocation feed is stale).
public struct PendingAuthorization: Sendable {
    let claims: AccessTokenClaims
    let resume: @Sendable (AccessTokenClaims) -> ProxyDecision
    let context: ProxyRequestContext
}
