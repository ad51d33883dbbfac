import AuthGateCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import RedisBridge
import Synchronization

/// Opens connections to upstreams: sockets in production, in-memory channels in tests.
protocol UpstreamConnector: Sendable {
    /// A connected channel to `key` on `eventLoop` whose pipeline ends with the HTTP/1.1 client
    /// codec and an ``UpstreamChannelHandler``.
    /// - Parameter tunnel: the connection carries a WebSocket handshake: it allows half-closure,
    ///   an ``UpstreamEndOfInputGate`` is in front of the response decoder, and the decoder
    ///   forwards the bytes after a `101` when it is removed (the tunnel's first frames).
    func connect(_ key: UpstreamConnectionPool.Key, on eventLoop: any EventLoop, timeout: TimeAmount, tunnel: Bool) -> EventLoopFuture<
        any Channel
    >
}

extension UpstreamConnector {
    /// Adds what every upstream connection's pipeline ends with (after TLS, if any).
    static func addUpstreamHandlers(to pipeline: ChannelPipeline.SynchronousOperations, tunnel: Bool) throws {
        if tunnel { try pipeline.addHandler(UpstreamEndOfInputGate()) }
        try pipeline.addHTTPClientHandlers(leftOverBytesStrategy: tunnel ? .forwardBytes : .dropBytes)
        try pipeline.addHandler(UpstreamChannelHandler())
    }
}

/// TCP (and TLS for `https://` upstreams) with `TCP_NODELAY`, on the caller's event loop.
///
/// A TLS connection is handed over only after its handshake has finished: the upstream's
/// certificate verified against the route's CA file (or the system's roots) and its name (the
/// route's `server_name`, or the upstream's host). A failed handshake is
/// ``UpstreamError/tlsHandshakeFailed(reason:)`` (502 and one log line), never a retry without TLS.
final class SocketUpstreamConnector: UpstreamConnector {
    /// TLS client contexts by settings, made once: the routes' at start, any other on first use.
    private let contexts: Mutex<[TLSClientConfiguration: Result<NIOSSLContext, TLSClientConfiguration.FileError>]>

    init(routes: [RouteConfiguration] = []) {
        var contexts: [TLSClientConfiguration: Result<NIOSSLContext, TLSClientConfiguration.FileError>] = [:]
        for route in routes where route.hasHTTPSUpstream && contexts[route.tls] == nil {
            contexts[route.tls] = Self.makeContext(route.tls)
        }
        self.contexts = Mutex(contexts)
    }

    private static func makeContext(_ settings: TLSClientConfiguration) -> Result<NIOSSLContext, TLSClientConfiguration.FileError> {
        Result { () throws(TLSClientConfiguration.FileError) in try settings.makeContext() }
    }

    private func context(for settings: TLSClientConfiguration) -> Result<NIOSSLContext, TLSClientConfiguration.FileError> {
        contexts.withLock { contexts in
            if let known = contexts[settings] { return known }
            let made = Self.makeContext(settings)
            contexts[settings] = made
            return made
        }
    }

    func connect(_ key: UpstreamConnectionPool.Key, on eventLoop: any EventLoop, timeout: TimeAmount, tunnel: Bool) -> EventLoopFuture<
        any Channel
    > {
        let tlsContext: NIOSSLContext?
        if let settings = key.tls {
            switch context(for: settings) {
            case .success(let context): tlsContext = context
            case .failure(let error): return eventLoop.makeFailedFuture(UpstreamError.tlsHandshakeFailed(reason: error.description))
            }
        } else {
            tlsContext = nil
        }
        let handshake = NIOLockedValueBox<EventLoopFuture<Void>?>(nil)
        let connected = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: tunnel)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let settings = key.tls, let tlsContext {
                        let waiter = TLSHandshakeWaiter(eventLoop: channel.eventLoop, timeout: timeout)
                        try channel.pipeline.syncOperations.addHandler(try settings.makeHandler(context: tlsContext, host: key.host))
                        try channel.pipeline.syncOperations.addHandler(waiter)
                        handshake.withLockedValue { $0 = waiter.handshake.futureResult }
                    }
                    try Self.addUpstreamHandlers(to: channel.pipeline.syncOperations, tunnel: tunnel)
                }
            }
            .connect(host: key.host, port: key.port)
            .flatMapErrorThrowing { error -> any Channel in
                if case ChannelError.connectTimeout = error { throw UpstreamError.connectTimeout }
                if error is NIOSSLExtraError {
                    throw UpstreamError.tlsHandshakeFailed(reason: "the upstream's name cannot be sent as a TLS server name")
                }
                throw UpstreamError.connectFailed
            }
        guard let settings = key.tls else { return connected }
        return connected.flatMap { channel in
            guard let waiting = handshake.withLockedValue({ $0 }) else { return channel.eventLoop.makeSucceededFuture(channel) }
            return waiting.map { channel }.flatMapErrorThrowing { error -> any Channel in
                channel.close(promise: nil)
                throw UpstreamError.tlsHandshakeFailed(reason: settings.describe(handshakeError: error, host: key.host))
            }
        }
    }
}
