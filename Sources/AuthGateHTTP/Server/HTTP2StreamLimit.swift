import AuthGateCore
import NIOCore
import NIOHTTP2

/// `server.http2.max_concurrent_streams` for one HTTP/2 connection, enforced as each stream opens.
///
/// NIO applies the limit the server announces in SETTINGS only once the client acknowledges
/// them (RFC 9113 allows no less), so a client that never sends the acknowledgement could open
/// streams without bound. Streams past the limit are refused here with `RST_STREAM
/// REFUSED_STREAM` (the client may retry them; nothing was processed). Used on the connection's
/// event loop only.
final class HTTP2StreamLimit {
    private let limit: Int
    private var open = 0
    private var idleAction: (() -> Void)?

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts `stream` until it closes; false (and the stream refused) when the limit is reached.
    func admit(_ stream: any Channel) throws -> Bool {
        guard open < limit else {
            GatewayMetrics.http2StreamRefused()
            try stream.pipeline.syncOperations.addHandler(Refusal())
            return false
        }
        open += 1
        let loopBoundSelf = NIOLoopBound(self, eventLoop: stream.eventLoop)
        stream.closeFuture.assumeIsolated().whenComplete { _ in loopBoundSelf.value.streamClosed() }
        return true
    }

    /// Runs `action` once no stream is open: now, or when the last open one closes.
    func whenIdle(_ action: @escaping () -> Void) {
        if open == 0 {
            action()
        } else {
            idleAction = action
        }
    }

    private func streamClosed() {
        open -= 1
        if open == 0, let action = idleAction {
            idleAction = nil
            action()
        }
    }

    /// Resets its stream with REFUSED_STREAM as soon as it is active, and drops what it receives.
    final class Refusal: ChannelDuplexHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { refuse(context) }
        }

        func channelActive(context: ChannelHandlerContext) {
            refuse(context)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

        private func refuse(_ context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension HTTP2StreamLimit: Sendable {}

@available(*, unavailable)
extension HTTP2StreamLimit.Refusal: Sendable {}
