import NIOCore
import NIOHTTP1

/// The last handler of an upstream connection: turns one exchange's response parts into a head
/// and a back-pressured body sequence, and enforces the head and idle timeouts.
///
/// Reads are held while the body's consumer does not want more, so a slow client holds the
/// upstream back instead of filling memory; between exchanges they go on, so a closed kept-alive
/// connection is noticed at once. Lives on the connection's event loop; the connection drives it through
/// `begin(...)` on that loop.
final class UpstreamResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart
    typealias Body = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyDemand>

    /// A response as it starts: the head and its body.
    struct Start: Sendable {
        let head: HTTPResponseHead
        let body: StartBody
    }

    /// A small body announced by `Content-Length` arrives whole with the head, so the client gets
    /// head and body in one write; anything else streams.
    enum StartBody: Sendable {
        case complete(ByteBuffer)
        case streaming(Body)
    }

    /// Largest announced body collected before the head is passed on.
    static let collectLimit = 64 << 10

    private enum State {
        /// Between exchanges.
        case idle
        case awaitingHead(EventLoopPromise<Start>)
        case collectingBody(EventLoopPromise<Start>, HTTPResponseHead, ByteBuffer)
        case streamingBody(Body.Source)
        case closed
    }

    private var state = State.idle
    private var context: ChannelHandlerContext?
    private var wantsData = false
    /// A `read` arrived while no data was wanted; it is passed on when data is wanted again.
    private var readHeld = false
    private var headTimer: Scheduled<Void>?
    private var idleTimer: Scheduled<Void>?
    private var idleTimeout = TimeAmount.seconds(60)
    /// Called on the event loop when an exchange ends: true when the connection can be reused.
    private var onEnd: ((Bool) -> Void)?
    private var keepAlive = true
    /// Numbers exchanges, so a late signal from a finished body never touches the next one.
    private var exchange = 0

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Starts an exchange whose request has been (or is being) written; on the event loop.
    func begin(head promise: EventLoopPromise<Start>, headTimeout: TimeAmount, idleTimeout: TimeAmount, keepAlive: Bool, onEnd: @escaping (Bool) -> Void) {
        guard case .idle = state, let context else {
            promise.fail(UpstreamError.connectionLost(beforeResponse: true))
            return
        }
        state = .awaitingHead(promise)
        exchange += 1
        self.idleTimeout = idleTimeout
        self.keepAlive = keepAlive
        self.onEnd = onEnd
        headTimer = context.eventLoop.scheduleTask(in: headTimeout) { [weak self] in self?.fail(.headTimeout) }
        wantData()
    }

    func read(context: ChannelHandlerContext) {
        switch state {
        case .streamingBody where !wantsData:
            // The body's consumer is behind: the upstream waits (back-pressure).
            readHeld = true
        case .idle, .closed:
            // Between exchanges reading goes on, so an upstream closing a kept-alive connection is
            // noticed at once (and no epoll change is paid per exchange).
            context.read()
        default:
            armIdleTimer()
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        cancelIdleTimer()
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard case .awaitingHead(let promise) = state else { return fail(.protocolViolation) }
            // Interim responses (100 Continue, 103 Early Hints) are not relayed; 101 is refused.
            if head.status.code == 101 { return fail(.protocolViolation) }
            if head.status.code >= 100, head.status.code < 200 { return }
            headTimer?.cancel()
            headTimer = nil
            keepAlive = keepAlive && head.isKeepAlive
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length <= Self.collectLimit {
                state = .collectingBody(promise, head, context.channel.allocator.buffer(capacity: length))
                return
            }
            let demand = BodyDemand(eventLoop: context.eventLoop, handler: NIOLoopBound(self, eventLoop: context.eventLoop), exchange: exchange)
            let body = Body.makeSequence(
                backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8), finishOnDeinit: false, delegate: demand
            )
            state = .streamingBody(body.source)
            promise.succeed(Start(head: head, body: .streaming(body.sequence)))
        case .body(var buffer):
            switch state {
            case .streamingBody(let source):
                if source.yield(buffer) == .stopProducing { wantsData = false }
            case .collectingBody(let promise, let head, var collected):
                state = .closed  // while `collected` is borrowed: no copy of the buffer
                collected.writeBuffer(&buffer)
                state = .collectingBody(promise, head, collected)
            default:
                fail(.protocolViolation)
            }
        case .end:
            switch state {
            case .streamingBody(let source):
                source.finish()
                finishExchange(reusable: keepAlive)
            case .collectingBody(let promise, let head, let collected):
                finishExchange(reusable: keepAlive)
                promise.succeed(Start(head: head, body: .complete(collected)))
            default:
                fail(.protocolViolation)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.connectionLost(beforeResponse: isBeforeResponse))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(.connectionLost(beforeResponse: isBeforeResponse))
        context.close(promise: nil)
    }

    /// The consumer of exchange `number` wants more of the body.
    fileprivate func produceMore(exchange number: Int) {
        guard number == exchange, case .streamingBody = state else { return }
        wantData()
    }

    /// The consumer of exchange `number` stopped before the end (the client went away): the
    /// connection cannot be reused.
    fileprivate func consumerGone(exchange number: Int) {
        guard number == exchange, case .streamingBody = state else { return }
        finishExchange(reusable: false)
    }

    private var isBeforeResponse: Bool {
        if case .awaitingHead = state { return true }
        return false
    }

    private func wantData() {
        wantsData = true
        guard readHeld, let context else { return }
        readHeld = false
        armIdleTimer()
        context.read()
    }

    private func armIdleTimer() {
        guard idleTimer == nil, let context else { return }
        idleTimer = context.eventLoop.scheduleTask(in: idleTimeout) { [weak self] in self?.fail(.idleTimeout) }
    }

    private func cancelIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    private func fail(_ error: UpstreamError) {
        switch state {
        case .awaitingHead(let promise):
            state = .closed
            promise.fail(error)
        case .collectingBody(let promise, _, _):
            state = .closed
            promise.fail(error)
        case .streamingBody(let source):
            state = .closed
            source.finish(error)
        case .idle:
            state = .closed
        case .closed:
            return
        }
        finishExchange(reusable: false)
    }

    /// Ends the current exchange: the connection goes back to idle, or is closed.
    private func finishExchange(reusable: Bool) {
        headTimer?.cancel()
        headTimer = nil
        cancelIdleTimer()
        wantsData = false
        state = reusable ? .idle : .closed
        let onEnd = self.onEnd
        self.onEnd = nil
        onEnd?(reusable)
        if !reusable { context?.close(promise: nil) }
    }
}

/// Tells the handler, on its event loop, when the body's consumer wants more or has gone.
struct BodyDemand: NIOAsyncSequenceProducerDelegate {
    let eventLoop: any EventLoop
    let handler: NIOLoopBound<UpstreamResponseHandler>
    let exchange: Int

    func produceMore() {
        eventLoop.execute { handler.value.produceMore(exchange: exchange) }
    }

    func didTerminate() {
        eventLoop.execute { handler.value.consumerGone(exchange: exchange) }
    }
}
