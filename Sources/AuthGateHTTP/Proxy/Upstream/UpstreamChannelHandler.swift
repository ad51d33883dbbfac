import NIOCore
import NIOHTTP1

/// What an upstream connection tells the exchange using it, on the connection's event loop
/// (which is the client connection's).
protocol UpstreamExchangeDelegate: AnyObject {
    /// The final response head (interim 1xx responses are dropped by the decoder).
    func upstreamResponseHead(_ head: HTTPResponseHead)
    func upstreamResponseBody(_ buffer: ByteBuffer)
    /// The response is complete; `keepAlive` when the upstream will take another request on
    /// this connection.
    func upstreamResponseEnd(keepAlive: Bool)
    /// A read cycle ended: what was written to the client can be flushed.
    func upstreamReadComplete()
    /// The exchange failed; the connection is closed.
    func upstreamFailed(_ error: UpstreamError)
    /// The upstream connection can take more of the request body, or cannot.
    func upstreamWritabilityChanged(isWritable: Bool)
}

/// The last handler of an upstream connection: passes one exchange's response to its delegate,
/// enforces the route's head and idle timeouts, and holds reads while the client cannot take
/// more (back-pressure).
///
/// Between exchanges (no delegate) reading goes on, so an upstream closing a kept-alive connection
/// is noticed at once; any byte arriving then is a protocol violation and closes the connection.
final class UpstreamChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The exchange using the connection; nil between exchanges.
    private(set) var delegate: (any UpstreamExchangeDelegate)?
    private var context: ChannelHandlerContext?
    private var responseStarted = false
    /// The response head allows another exchange on this connection.
    private var keepAlive = true
    private var closed = false
    /// The exchange is a WebSocket handshake: a `101` is passed on, and the connection then stops
    /// being HTTP (its handlers are replaced; parts still decoded meanwhile are ignored).
    private var expectsUpgrade = false
    private var upgraded = false
    /// Reads are held because the client cannot take more.
    private var readingPaused = false
    /// A `read` arrived while paused; passed on when reading resumes.
    private var readHeld = false
    private var headTimeout = TimeAmount.seconds(30)
    private var idleTimeout = TimeAmount.seconds(60)
    /// Until the response head must have arrived (set once the request is sent).
    private var headDeadline: NIODeadline?
    /// Until some byte must have arrived (while a read is wanted during an exchange).
    private var idleDeadline: NIODeadline?
    private var timer = LazyTimer()

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
        self.context = nil
    }

    /// Starts an exchange: `delegate` receives the response.
    func begin(_ delegate: any UpstreamExchangeDelegate, headTimeout: TimeAmount, idleTimeout: TimeAmount, expectsUpgrade: Bool) {
        self.delegate = delegate
        self.expectsUpgrade = expectsUpgrade
        self.headTimeout = headTimeout
        self.idleTimeout = idleTimeout
        responseStarted = false
        headDeadline = nil
        idleDeadline = nil
        if closed {
            fail(.connectionLost(beforeResponse: true))
        }
    }

    /// The request is fully written: the response head is due within the head timeout.
    func requestSent() {
        guard delegate != nil, !responseStarted, let context else { return }
        let now = NIODeadline.now()
        headDeadline = now + headTimeout
        idleDeadline = now + idleTimeout
        armTimer(context)
    }

    /// Ends the exchange (its delegate is released); the connection goes back to reading freely.
    func endExchange() {
        delegate = nil
        headDeadline = nil
        idleDeadline = nil
        setReadingPaused(false)
    }

    /// Holds or resumes reads from the upstream (the client's side is full, or has room again).
    func setReadingPaused(_ paused: Bool) {
        guard paused != readingPaused else { return }
        readingPaused = paused
        if !paused, readHeld, let context {
            readHeld = false
            markIdleDeadline()
            context.read()
        }
    }

    // MARK: Inbound

    func read(context: ChannelHandlerContext) {
        if readingPaused {
            readHeld = true
            return
        }
        markIdleDeadline()
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if upgraded { return }
        guard let delegate else {
            // Nothing is expected between exchanges.
            fail(.protocolViolation)
            return
        }
        if idleDeadline != nil { idleDeadline = NIODeadline.now() + idleTimeout }
        switch unwrapInboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols && expectsUpgrade && !responseStarted:
            upgraded = true
            headDeadline = nil
            idleDeadline = nil
            delegate.upstreamResponseHead(head)
        case .head(let head):
            guard !responseStarted, head.status.code != 101 else { return fail(.protocolViolation) }
            responseStarted = true
            keepAlive = head.isKeepAlive
            headDeadline = nil
            delegate.upstreamResponseHead(head)
        case .body(let buffer):
            guard responseStarted else { return fail(.protocolViolation) }
            delegate.upstreamResponseBody(buffer)
        case .end:
            guard responseStarted else { return fail(.protocolViolation) }
            let keepAlive = self.keepAlive
            headDeadline = nil
            idleDeadline = nil
            self.delegate = nil
            delegate.upstreamResponseEnd(keepAlive: keepAlive)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        delegate?.upstreamReadComplete()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        delegate?.upstreamWritabilityChanged(isWritable: context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        fail(.connectionLost(beforeResponse: !responseStarted))
        context.fireChannelInactive()
    }

    /// The upstream stopped sending (a FIN; only a tunnel handshake's connection allows
    /// half-closure). After the decoder has ended a response read to the end of input, or before
    /// any response: the connection is of no more use, and closes. After a `101` the end of input
    /// belongs to the tunnel (an ``UpstreamEndOfInputGate`` holds it for the relay).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, !upgraded {
            fail(.connectionLost(beforeResponse: !responseStarted))
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error is HTTPParserError ? .protocolViolation : .connectionLost(beforeResponse: !responseStarted))
    }

    // MARK: Failure and timeouts

    /// Fails the exchange (if any) and closes the connection.
    private func fail(_ error: UpstreamError) {
        let delegate = self.delegate
        self.delegate = nil
        headDeadline = nil
        idleDeadline = nil
        timer.cancel()
        if !closed {
            closed = true
            context?.close(promise: nil)
        }
        delegate?.upstreamFailed(error)
    }

    private func markIdleDeadline() {
        guard delegate != nil, responseStarted || headDeadline != nil, let context else { return }
        idleDeadline = NIODeadline.now() + idleTimeout
        armTimer(context)
    }

    private func armTimer(_ context: ChannelHandlerContext) {
        let deadlines = [headDeadline, readingPaused ? nil : idleDeadline].compactMap { $0 }
        guard let earliest = deadlines.min() else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer.ensure(firesBy: earliest, on: context.eventLoop) { bound.value.timerFired() }
    }

    private func timerFired() {
        timer.fired()
        guard delegate != nil, let context else { return }
        let now = NIODeadline.now()
        if let headDeadline, now >= headDeadline { return fail(.headTimeout) }
        if !readingPaused, let idleDeadline, now >= idleDeadline { return fail(.idleTimeout) }
        armTimer(context)
    }
}

@available(*, unavailable)
extension UpstreamChannelHandler: Sendable {}
