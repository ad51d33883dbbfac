public import Hummingbird
public import Logging
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

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.eventLoop = source.channel.eventLoop
    }

    /// The API's bodies are small JSON documents: GoTrue's 1 MiB limit.
    public var maxUploadSize: Int { 1 << 20 }
}

/// What a request's handling learned that the access line and the metrics need: the proxy route.
public final class RequestOutcome: Sendable {
    private let route = Mutex<String?>(nil)

    /// The proxy route serving the request (nil for AuthGate's own endpoints).
    public var routeName: String? {
        get { route.withLock { $0 } }
        set { route.withLock { $0 = newValue } }
    }
}
