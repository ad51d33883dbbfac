import NIOCore
import NIOHTTP2

/// Closes an HTTP/2 connection `limit` after its connection manager began a graceful close,
/// whatever the client does.
///
/// NIO's connection manager (`NIOHTTP2ServerConnectionManagementHandler`) closes gracefully in
/// two GOAWAY frames with a PING between them, and starts its grace period only once the client
/// acknowledges that PING. A client that never does (it stopped reading, or never meant to) kept
/// the connection open for good after `keep_alive_timeout` or a graceful shutdown began. This
/// handler sits in front of the manager, sees its first GOAWAY go out, and closes the connection
/// once `limit` (`client_idle_timeout`, the grace the manager grants too) has passed from then.
final class HTTP2GracefulCloseDeadline: ChannelDuplexHandler {
    typealias InboundIn = Any
    typealias InboundOut = Any
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let limit: TimeAmount
    private var deadline: Scheduled<Void>?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if deadline == nil, case .goAway = unwrapOutboundIn(data).payload {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: limit) { channel.close(promise: nil) }
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }
}

@available(*, unavailable)
extension HTTP2GracefulCloseDeadline: Sendable {}
