import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Opens connections to upstreams: sockets in production, in-memory channels in tests.
protocol UpstreamConnector: Sendable {
    /// A connected channel to `key` on `eventLoop` whose pipeline ends with the HTTP/1.1 client
    /// codec and an ``UpstreamChannelHandler``.
    /// - Parameter keepsLeftoverBytes: the response decoder forwards the bytes after a `101` when
    ///   it is removed (a WebSocket tunnel's first frames).
    func connect(_ key: UpstreamConnectionPool.Key, on eventLoop: any EventLoop, timeout: TimeAmount, keepsLeftoverBytes: Bool) -> EventLoopFuture<
        any Channel
    >
}

extension UpstreamConnector {
    /// Adds what every upstream connection's pipeline ends with.
    static func addUpstreamHandlers(to pipeline: ChannelPipeline.SynchronousOperations, keepsLeftoverBytes: Bool) throws {
        try pipeline.addHTTPClientHandlers(leftOverBytesStrategy: keepsLeftoverBytes ? .forwardBytes : .dropBytes)
        try pipeline.addHandler(UpstreamChannelHandler())
    }
}

/// TCP (and TLS for `https://` upstreams) with `TCP_NODELAY`, on the caller's event loop.
struct SocketUpstreamConnector: UpstreamConnector {
    private let tlsContext: NIOSSLContext?

    init() {
        tlsContext = try? NIOSSLContext(configuration: .makeClientConfiguration())
    }

    func connect(_ key: UpstreamConnectionPool.Key, on eventLoop: any EventLoop, timeout: TimeAmount, keepsLeftoverBytes: Bool) -> EventLoopFuture<
        any Channel
    > {
        let tlsContext = self.tlsContext
        if key.tls, tlsContext == nil { return eventLoop.makeFailedFuture(UpstreamError.connectFailed) }
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if key.tls, let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tlsContext, serverHostname: Self.isIPAddress(key.host) ? nil : key.host))
                    }
                    try Self.addUpstreamHandlers(to: channel.pipeline.syncOperations, keepsLeftoverBytes: keepsLeftoverBytes)
                }
            }
            .connect(host: key.host, port: key.port)
            .flatMapErrorThrowing { error in
                if case ChannelError.connectTimeout = error { throw UpstreamError.connectTimeout }
                throw UpstreamError.connectFailed
            }
    }

    /// An IPv4 or IPv6 literal, which may not be sent as SNI.
    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || host.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }
    }
}
