import AuthGateCore
import Logging
import NIOCore

/// The last handler of an HTTP/2 connection, which decides when it closes:
/// - after a connection error (a flood over NIO's limits, a malformed frame): NIO's HTTP/2
///   handler has sent the GOAWAY and passes the error on; without a close the connection would
///   go on being read. Counted by the error's type.
/// - on graceful shutdown, once no stream is open: NIO's connection manager has sent its GOAWAY
///   and would wait for the client to answer a PING before closing, which an idle client that
///   is not reading never does; the server's drain would then last `shutdown_timeout`.
///   The connection's WebSocket streams are told first (``HTTP2WebSocketStreams``), so they end.
final class HTTP2ConnectionCloser: ChannelInboundHandler {
    typealias InboundIn = Any

    private let streams: HTTP2StreamLimit
    private let webSockets: HTTP2WebSocketStreams
    private let logger: Logger

    init(streams: HTTP2StreamLimit, webSockets: HTTP2WebSocketStreams, logger: Logger) {
        self.streams = streams
        self.webSockets = webSockets
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        GatewayMetrics.http2ConnectionError(kind: Self.kind(of: error))
        logger.debug("HTTP/2 connection closed after an error", metadata: ["gw.error": "\(type(of: error))"])
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            webSockets.quiesce()
            let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            streams.whenIdle { loopBoundContext.value.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The `kind` label: the error's type name, a closed set (NIOHTTP2's error types), never text from the peer.
    static func kind(of error: any Error) -> String {
        let name = String(describing: type(of: error))
        return name.split(separator: ".").last.map(String.init) ?? name
    }
}

@available(*, unavailable)
extension HTTP2ConnectionCloser: Sendable {}
