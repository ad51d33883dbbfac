import NIOCore
import NIOSSL

/// Keeps an upstream's end of input (its FIN, or TLS's `close_notify`) from the HTTP decoder
/// while a WebSocket tunnel is built on the connection.
///
/// An upstream may send its `101`, its first frames (a close frame, when it turns the caller away
/// at once) and the end of its input in one go. The gateway reads them in one read cycle; the
/// HTTP decoder holds the frames' bytes until it leaves the pipeline, a task later. Told of the
/// end of input before then, the decoder would drop those bytes, and the client would get 1001
/// instead of the upstream's own close frame. So on a tunnel handshake's connection (which allows
/// half-closure), once the `101` is in (``hold()``), the end of input waits here, in front of the
/// decoder, until the WebSocket framing has taken over (``release()``), and then reaches the
/// relay after the frames. A TLS upstream's end without `close_notify` (a TCP FIN alone, which
/// NIOSSL reports as an unclean shutdown before the end of input) is held as its end of input.
///
/// Before the `101`, or on a connection whose handshake failed, everything passes through.
final class UpstreamEndOfInputGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private enum State {
        /// Events pass through.
        case open
        /// The `101` is in: the end of input waits (`ended` once it came).
        case holding(ended: Bool)
        /// The framing took over: events pass through again.
        case released
    }

    private var state = State.open
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// The upstream agreed to switch: its end of input waits until ``release()``.
    func hold() {
        if case .open = state { state = .holding(ended: false) }
    }

    /// The WebSocket framing has taken the bytes the HTTP decoder held: an end of input that
    /// waited is passed on now.
    func release() {
        guard case .holding(let ended) = state else { return }
        state = .released
        if ended { context?.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .holding = state, case ChannelEvent.inputClosed = event {
            state = .holding(ended: true)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIOSSL reports a FIN without `close_notify` as this error, then the end of input.
        if case .holding = state, NIOSSLError.isUncleanShutdown(error) { return }
        context.fireErrorCaught(error)
    }
}

@available(*, unavailable)
extension UpstreamEndOfInputGate: Sendable {}
