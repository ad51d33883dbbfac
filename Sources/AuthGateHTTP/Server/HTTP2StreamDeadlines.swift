import AuthGateCore
import NIOCore
import NIOHTTP2

/// `server.client_idle_timeout` for one HTTP/2 stream, as ``ClientConnectionGuard`` applies it
/// to an HTTP/1.1 connection: while the gateway wants more of a request that has not ended, the
/// client may stay silent that long at most (a body held back because the upstream is slow does
/// not count), and a stream whose answer the client leaves unread (its window closed) no longer
/// than that either; then the stream is reset, so a client cannot hold upstream connections with
/// streams that never finish. Once the request has ended, the route's upstream timeouts apply.
/// A WebSocket stream has neither deadline (``becameTunnel()``), as a tunnel over HTTP/1.1 has none.
final class HTTP2StreamDeadlines: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let clientIdle: TimeAmount
    private var requestEnded = false
    private var tunnel = false
    /// When the request must next show progress (nil once it has ended).
    private var readDeadline: NIODeadline?
    /// When the client must have taken the answer (nil while the stream is writable).
    private var sendDeadline: NIODeadline?
    private var timer = LazyTimer()

    init(clientIdle: TimeAmount) {
        self.clientIdle = clientIdle
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
    }

    /// The stream carries a WebSocket (RFC 8441): quiet for long is normal, and the relay holds
    /// back what a client leaves unread, as over HTTP/1.1. No deadline applies from now on.
    func becameTunnel() {
        tunnel = true
        readDeadline = nil
        sendDeadline = nil
        timer.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let endsRequest: Bool?
        switch unwrapInboundIn(data) {
        case .headers(let headers): endsRequest = headers.endStream
        case .data(let body): endsRequest = body.endStream
        default: endsRequest = nil
        }
        if let endsRequest {
            // Progress: the next read asked for sets the deadline again, unless the request is over.
            readDeadline = nil
            if endsRequest { requestEnded = true }
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        if !requestEnded, !tunnel, readDeadline == nil {
            readDeadline = .now() + clientIdle
            arm(context)
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        sendDeadline = context.channel.isWritable || tunnel ? nil : .now() + clientIdle
        arm(context)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer.cancel()
        context.fireChannelInactive()
    }

    /// The earlier of the two deadlines in force.
    private var nextDeadline: NIODeadline? {
        guard let readDeadline, let sendDeadline else { return readDeadline ?? sendDeadline }
        return min(readDeadline, sendDeadline)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard let next = nextDeadline else { return }
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer.ensure(firesBy: next, on: context.eventLoop) { loopBoundSelf.value.check(loopBoundContext.value) }
    }

    private func check(_ context: ChannelHandlerContext) {
        timer.fired()
        if let next = nextDeadline, next <= .now() {
            GatewayMetrics.clientTimeout(kind: "client_idle")
            readDeadline = nil
            sendDeadline = nil
            context.close(promise: nil)
            return
        }
        arm(context)
    }
}

@available(*, unavailable)
extension HTTP2StreamDeadlines: Sendable {}
