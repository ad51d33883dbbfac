import NIOCore
import NIOHPACK
import NIOHTTP2

/// A WebSocket over one HTTP/2 stream (RFC 8441), where the gateway announces
/// `SETTINGS_ENABLE_CONNECT_PROTOCOL` (it does when routes are configured).
///
/// Sits before NIO's codec on each stream and looks at the request's first HEADERS only. A
/// request that is not an extended CONNECT leaves this handler behind at once. An extended
/// CONNECT is handed on as the HTTP/1.1 handshake (``HTTP2WebSocketHandshake/upgradeRequest(_:key:)``,
/// a bodiless `GET`: the block is marked as ending the request), so the gateway decides on it and
/// forwards it as it does any WebSocket upgrade: only on a proxy route, only with the route's
/// authorization. What the client sends after it is the tunnel's: it waits here, and the stream
/// is not read, until the tunnel is built. The answer goes back as RFC 8441 wants it: the
/// upstream's `101` as `200` (``HTTP2WebSocketHandshake/connectAnswer(_:)``), any refusal as it is.
/// Once the gateway has built the relay (``HTTP2TunnelFraming`` and ``WebSocketRelayHandler``
/// after this handler, `startRelaying()`), what waited is passed on and frames flow.
///
/// From the handshake on, the stream has no client idle deadline (a WebSocket may be quiet for
/// long, as over HTTP/1.1) and is told when graceful shutdown begins (``HTTP2WebSocketStreams``),
/// so that its tunnel ends with 1001 at once instead of holding the drain.
final class HTTP2WebSocketStream: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    enum State: Equatable {
        /// The request's first HEADERS has not come.
        case request
        /// The extended CONNECT went on as an upgrade; the gateway has not answered it yet.
        case handshake
        /// The answer opened the tunnel; the relay is being built.
        case opened
        /// The relay is built: frames pass both ways.
        case relaying
        /// The answer refused the tunnel: what the client sends is dropped.
        case refused
    }

    private(set) var state = State.request
    private let webSockets: HTTP2WebSocketStreams
    /// What the client sent while the tunnel was not built, in order.
    private var held: [HTTP2Frame.FramePayload] = []
    private var readHeld = false
    private var context: ChannelHandlerContext?

    init(webSockets: HTTP2WebSocketStreams) {
        self.webSockets = webSockets
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if state != .request { webSockets.closed(context.channel) }
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        webSockets.closed(context.channel)
        held.removeAll()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        switch state {
        case .request:
            guard case .headers(var headers) = payload,
                let upgrade = HTTP2WebSocketHandshake.upgradeRequest(headers.headers, key: HTTP2WebSocketHandshake.newKey())
            else {
                context.fireChannelRead(data)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                return
            }
            state = .handshake
            webSockets.opened(context.channel)
            (try? context.pipeline.syncOperations.handler(type: HTTP2StreamDeadlines.self))?.becameTunnel()
            // The client's end of stream, if it came with the CONNECT, ends the tunnel once it is
            // built: it waits with the rest.
            if headers.endStream { held.append(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))) }
            headers.headers = upgrade
            headers.endStream = true
            context.fireChannelRead(wrapInboundOut(.headers(headers)))
        case .handshake, .opened:
            held.append(payload)
        case .relaying:
            context.fireChannelRead(data)
        case .refused:
            break
        }
    }

    func read(context: ChannelHandlerContext) {
        switch state {
        case .handshake, .opened: readHeld = true
        case .request, .relaying, .refused: context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard state == .handshake, case .headers(var headers) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        let answer = HTTP2WebSocketHandshake.connectAnswer(headers.headers)
        headers.headers = answer.headers
        if answer.opensTunnel {
            state = .opened
        } else {
            state = .refused
            held.removeAll()
            resumeReading(context)
        }
        context.write(wrapOutboundOut(.headers(headers)), promise: promise)
    }

    /// The relay is in place after this handler: what the client sent meanwhile reaches it, and
    /// the stream is read again.
    func startRelaying() {
        guard state == .opened, let context else { return }
        state = .relaying
        let waiting = held
        held.removeAll()
        for payload in waiting { context.fireChannelRead(wrapInboundOut(payload)) }
        if !waiting.isEmpty { context.fireChannelReadComplete() }
        resumeReading(context)
    }

    private func resumeReading(_ context: ChannelHandlerContext) {
        guard readHeld else { return }
        readHeld = false
        context.read()
    }
}

@available(*, unavailable)
extension HTTP2WebSocketStream: Sendable {}
