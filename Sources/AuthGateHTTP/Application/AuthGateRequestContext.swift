public import Hummingbird
public import Logging
public import NIOCore

/// The per-request context of every AuthGate route: Hummingbird's core storage plus the peer
/// address (for `X-Forwarded-For` and rate limits) and the request id.
public struct AuthGateRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer, before any trusted-proxy header is considered.
    public let remoteAddress: SocketAddress?
    /// The request id echoed in `X-Request-Id` and logged on every line.
    public var requestID: String = ""
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
