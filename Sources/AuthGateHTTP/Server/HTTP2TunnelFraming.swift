import NIOCore
import NIOHTTP2

/// An HTTP/2 stream as the byte stream a WebSocket tunnel runs on (RFC 8441 §5: the stream's
/// DATA frames carry the WebSocket's bytes, and its end is the TCP FIN of RFC 6455): DATA read
/// becomes bytes for the frame decoder, the client's END_STREAM (or trailers, which end the
/// stream too) becomes `ChannelEvent.inputClosed`, bytes written become DATA, and closing the
/// output or the stream ends our side with END_STREAM first. Added by the gateway after
/// ``HTTP2WebSocketStream`` once the tunnel is open.
final class HTTP2TunnelFraming: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = HTTP2Frame.FramePayload

    private var inputEnded = false
    private var outputEnded = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !inputEnded else { return }
        switch unwrapInboundIn(data) {
        case .data(let frame):
            if case .byteBuffer(let bytes) = frame.data, bytes.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(bytes)) }
            if frame.endStream { endInput(context) }
        case .headers:
            endInput(context)
        default:
            break
        }
    }

    private func endInput(_ context: ChannelHandlerContext) {
        inputEnded = true
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !outputEnded else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(unwrapOutboundIn(data))))), promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch mode {
        case .output:
            endOutput(context)
            promise?.succeed(())
        case .all:
            endOutput(context)
            context.close(mode: mode, promise: promise)
        case .input:
            context.close(mode: mode, promise: promise)
        }
    }

    /// END_STREAM on an empty DATA frame, once, after what was written.
    private func endOutput(_ context: ChannelHandlerContext) {
        guard !outputEnded else { return }
        outputEnded = true
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))), promise: nil)
    }
}

@available(*, unavailable)
extension HTTP2TunnelFraming: Sendable {}
