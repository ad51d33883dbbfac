public import AuthGateCore
public import Hummingbird
import Logging
public import NIOCore
import Synchronization

/// The per-request context of every AuthGate route: Hummingbird's core storage plus the peer
/// address (for `X-Forwarded-For` and rate limits) and the request id.
public struct AuthGateRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer, before any trusted-proxy header is considered.
    public let remoteAddress: SocketAddress?
    /// The request id echoed in `X-Request-Id` and logged on every line.
    public var requestID: String = ""
    /// Filled in by the middleware that learns it, read by the request log: shared by every copy
    /// of the context along the middleware chain.
    public let outcome = RequestOutcome()
    /// The client connection's event loop (new upstream connections are made on it).
    public let eventLoop: any EventLoop
    /// The caller of a bearer-protected endpoint, set by ``BearerAuthenticator`` (`.user`).
    public var caller: AuthenticatedUser? {
        get { authentication?.caller }
        set { authentication = Authentication(caller: newValue, adminClaims: adminClaims) }
    }
    /// The admin's claims, set by ``BearerAuthenticator`` (`.admin`).
    public var adminClaims: AccessTokenClaims? {
        get { authentication?.adminClaims }
        set { authentication = Authentication(caller: caller, adminClaims: newValue) }
    }
    /// The caller and the admin's claims behind one reference: the context is copied at every
    /// middleware hop, and the account and claims inline made each copy retain some thirty fields.
    private var authentication: Authentication?
    /// The `Authorization` value of a request answered from the connection's pipeline, which keeps
    /// it out of the request's fields (``ApplicationRequest/authorization``); nil for a request
    /// that came through Hummingbird's channel, whose field holds it. Read ``authorization(of:)``.
    var authorizationBesideFields: String?

    /// The request's `Authorization` value, wherever it travels: beside the fields (the pipeline)
    /// or in them (Hummingbird's channel), never both. The decision refused two such lines.
    func authorization(of request: Request) -> String? {
        authorizationBesideFields ?? request.headers[.authorization]
    }

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.eventLoop = source.channel.eventLoop
    }

    /// The API's bodies are small JSON documents: GoTrue's 1 MiB limit.
    public var maxUploadSize: Int { 1 << 20 }
}

/// What a request's handling learned that the access line and the metrics need: the proxy
/// route, the user, and why it was refused. Shared by every copy of the request's context.
public final class RequestOutcome: Sendable {
    private struct Facts {
        var routeName: String?
        var userID: String?
        var reason: String?
    }

    private let facts = Mutex(Facts())

    /// The proxy route serving the request (nil for AuthGate's own endpoints).
    public var routeName: String? {
        get { facts.withLock { $0.routeName } }
        set { facts.withLock { $0.routeName = newValue } }
    }

    /// The user the request acted for, once known (a user id only; never a token).
    public var userID: String? {
        get { facts.withLock { $0.userID } }
        set { facts.withLock { $0.userID = newValue } }
    }

    /// The stable reason of a refusal (`expired`, `nonce_mismatch`, `session_revoked`, …).
    public var reason: String? {
        get { facts.withLock { $0.reason } }
        set { facts.withLock { $0.reason = newValue } }
    }
}

/// What ``BearerAuthenticator`` proved about a request's caller, never changed once made.
private final class Authentication: Sendable {
    let caller: AuthenticatedUser?
    let adminClaims: AccessTokenClaims?

    init(caller: AuthenticatedUser?, adminClaims: AccessTokenClaims?) {
        self.caller = caller
        self.adminClaims = adminClaims
    }
}
