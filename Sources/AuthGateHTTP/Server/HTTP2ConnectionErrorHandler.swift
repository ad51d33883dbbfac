import AuthGateCore
import Logging
import NIOCore

/// The last handler of an HTTP/2 connection: NIO's HTTP/2 handler answers a connection error (a
/// flood over its limits, a malformed frame) with a GOAWAY and passes the error on; this closes
/// the connection, so the peer's further frames are not read, and counts the refusal.
final class HTTP2ConnectionErrorHandler: ChannelInboundHandler {
    typealias InboundIn = Any

    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        GatewayMetrics.http2ConnectionError(kind: Self.kind(of: error))
        logger.debug("HTTP/2 connection closed after an error", metadata: ["gw.error": "\(type(of: error))"])
        context.close(promise: nil)
    }

    /// The `kind` label: the error's type name, a closed set (NIOHTTP2's error types), never text from the peer.
    static func kind(of error: any Error) -> String {
        let name = String(describing: type(of: error))
        return name.split(separator: ".").last.map(String.init) ?? name
    }
}

@available(*, unavailable)
extension HTTP2ConnectionErrorHandler: Sendable {}
