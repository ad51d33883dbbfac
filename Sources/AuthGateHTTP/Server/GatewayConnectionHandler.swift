import AuthGateCore
import Logging
import NIOCore
import NIOHTTP1

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Every client request passes here, right after HTTP decoding, and is decided once
/// (``EdgeProxy/decide(_:peer:proxy:now:)``): a request for AuthGate's own endpoints is answered
/// by the router with its target normalized, called from here when the request's body is small
/// (``ApplicationPipeline``) and through Hummingbird's channel otherwise; a request for a proxy
/// route is forwarded to its upstream here, on this connection's event loop, with no task and no
/// lock per request (``ProxyExchangeStateMachine`` says what to do at each step); a request the
/// gateway refuses is answered here.
///
/// Requests are served one at a time, in order: while one is served, parts of the next
/// (pipelined) request wait, and reading from the client pauses. Reading also pauses while the
/// upstream cannot take more of a request body, and reading from the upstream pauses while the
/// client cannot take more of a response (back-pressure both ways).
final class GatewayConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What the connection is doing with its current request.
    enum Mode {
        case idle
        /// Hummingbird serves the request; its parts pass through.
        case application(requestEnded: Bool, responseEnded: Bool)
        /// The request is for the router (``application``): its body is being gathered.
        case gathering
        /// The router is answering the gathered request; parts wait.
        case answering
        /// The store is asked about the session (the revocation feed is stale); parts wait.
        case deciding
        /// The gateway serves the request (``exchange``): forwarded, or answered itself.
        case exchange
        /// The connection became a WebSocket tunnel; HTTP is over.
        case tunnel
        /// Closing: nothing more is served. After a complete answer the connection lingers: its
        /// write side is closed and what the client still sends is read and dropped
        /// (``closeAfterAnswer()``).
        case closed
    }

    let proxy: EdgeProxy?
    /// The router, called from here for requests with a small body; nil: Hummingbird serves all.
    let application: ApplicationPipeline?
    let connections: LoopConnections?
    let connectionGuard: ClientConnectionGuard?
    let logger: Logger
    /// How long the rest of a request body may take to arrive after its response was written.
    let drainTimeout: TimeAmount
    /// Spans for proxied requests (`tracing.enabled`).
    let tracing: Bool
    /// Set on an HTTP/1.x connection: told each request's method as it arrives, so that its
    /// answer is framed for it (none of the body of an answer to `HEAD`).
    let responseEncoder: HTTP1ResponseEncoder?
    /// Set on an HTTP/2 stream only: the largest header list a request may have (``EdgeProxy``'s 431).
    let headerListLimit: Int?
    /// This handler serves one HTTP/2 stream (a request of its own), not an HTTP/1.1 connection.
    var isHTTP2Stream: Bool { headerListLimit != nil }

    var mode = Mode.idle
    /// The request the gateway serves itself (mode `exchange`).
    var exchange: ProxyExchange?
    /// The request being gathered for the router (mode `gathering`).
    var gathered: GatheredRequest?
    /// The `Date` header of the router's answers.
    var date = HTTPDate()
    var context: ChannelHandlerContext?
    /// What the decoder gave that could not be taken yet: parts of a pipelined request (or of
    /// one waiting for a decision), and the decoder's error after them.
    private var pending = CircularBuffer<Inbound>()

    /// One thing the decoder gave, kept in order.
    private enum Inbound {
        case part(HTTPServerRequestPart)
        /// The bytes after the parts before it could not be parsed: answered with 400 in turn,
        /// once the requests before it are answered.
        case unparsable
    }
    /// A `read` was held; it is passed on once reading may go on.
    private var readHeld = false
    private var processing = false
    private var inReadCycle = false
    /// Parts were passed to Hummingbird outside a read cycle: its stream delivers them on the
    /// next `channelReadComplete`, which is then fired by hand.
    private var passedOutsideRead = false
    /// Body parts were forwarded upstream in this read cycle and want a flush.
    var upstreamNeedsFlush = false
    /// The connection closes once the current response is written (graceful shutdown, the
    /// client's half-close, a request after which the decoder stops).
    var closeAfterResponse = false
    /// Why a WebSocket tunnel set up from now on ends as soon as it is built: the client stopped
    /// sending (a FIN) or graceful shutdown began, while the upstream answered the handshake.
    var tunnelEndsOnceBuilt: WebSocketRelayHandler.TunnelEnd?
    /// The gateway serves a request without a body: the decoder's `end` for it is taken
    /// whenever it comes, even after the exchange is over.
    private var skipsClientEnd = false

    private var cachedPeerAddress: String?
    /// Runs the tasks this connection starts (the router's answers, revocation checks) on its loop.
    let taskExecutor: EventLoopTaskExecutor
    /// On an HTTP/2 stream: adds the handlers Hummingbird reads the stream through, and starts
    /// Hummingbird on it, the first time a request must go to Hummingbird's channel (a streamed
    /// body, `HEAD`, `Expect: 100-continue`). Most streams never need them: their request is
    /// answered here or proxied.
    var attachRouterChannel: ((any Channel) throws -> Void)?

    init(
        proxy: EdgeProxy?, application: ApplicationPipeline? = nil, connectionGuard: ClientConnectionGuard?, logger: Logger, drainTimeout: TimeAmount,
        tracing: Bool, eventLoop: any EventLoop,
        headerListLimit: Int? = nil, taskExecutor: EventLoopTaskExecutor? = nil, responseEncoder: HTTP1ResponseEncoder? = nil
    ) {
        self.headerListLimit = headerListLimit
        self.responseEncoder = responseEncoder
        self.taskExecutor = taskExecutor ?? EventLoopTaskExecutor(eventLoop: eventLoop)
        self.proxy = proxy
        self.application = application
        self.connections = proxy?.connections.connections(on: eventLoop)
        self.connectionGuard = connectionGuard
        self.logger = logger
        self.drainTimeout = drainTimeout
        self.tracing = tracing
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard mode != .closed else { return }  // lingering: dropped
        inReadCycle = true
        let part = unwrapInboundIn(data)
        connectionGuard?.decoded(part)
        if case .head(let head) = part { responseEncoder?.requestArrived(head.method) }
        pending.append(.part(part))
        processPending()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inReadCycle = false
        passedOutsideRead = false
        if upstreamNeedsFlush {
            upstreamNeedsFlush = false
            exchange?.connection?.flush()
        }
        context.fireChannelReadComplete()
        if readsItself { context.read() }
    }

    /// Lingering: what arrives is dropped here, so reading must not wait for Hummingbird to ask
    /// (it may never ask again).
    private var readsItself: Bool { mode == .closed }

    func channelInactive(context: ChannelHandlerContext) {
        if mode == .exchange { exchangeClientClosed() }
        mode = .closed
        pending.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch mode {
        case .closed:
            // Lingering after the answer: what the client still sends is dropped, unparsed.
            break
        case .application:
            // Hummingbird answers what it is serving; nothing more is read afterwards.
            closeAfterResponse = true
            context.fireErrorCaught(error)
        case _ where error is HTTPParserError || error is RequestBodyFraming.Exceeded:
            // Bytes NIO's decoder cannot parse (it stops there), or a body with more chunked
            // framing than data allows (the connection guard stops passing bytes on). After
            // complete requests: those are answered first, then a 400. Inside the current
            // request's body (broken chunked framing): that request is answered 400 unless its
            // answer has begun. Either way the connection then closes.
            pending.append(.unparsable)
            processPending()
        default:
            logger.debug("client connection failed", metadata: ["gw.error": "\(type(of: error))"])
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            // Graceful shutdown: the current request is finished, then the connection closes.
            if tunnelEndsOnceBuilt == nil { tunnelEndsOnceBuilt = .shutdown }
            closeWhenIdleOrAfterResponse(context)
        case ChannelEvent.inputClosed:
            if case .application = mode { context.fireUserInboundEventTriggered(event) }
            if mode == .closed {
                context.close(promise: nil)
                return
            }
            tunnelEndsOnceBuilt = .inputClosed
            closeWhenIdleOrAfterResponse(context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func closeWhenIdleOrAfterResponse(_ context: ChannelHandlerContext) {
        closeAfterResponse = true
        if mode == .idle, pending.isEmpty { context.close(promise: nil) }
    }

    /// Takes the waiting parts while the current request allows.
    func processPending() {
        guard !processing, let context else { return }
        processing = true
        while let next = pending.first {
            switch next {
            case .part(let part):
                guard accepts(part) else { break }
                pending.removeFirst()
                take(part, context)
                continue
            case .unparsable:
                switch mode {
                case .idle:
                    pending.removeFirst()
                    refuseUnparsable()
                    continue
                case .exchange where exchange?.acceptsRequestParts == true:
                    pending.removeFirst()
                    exchangeRequestUnparsable()
                    continue
                case .gathering:
                    // Not reached: a gathered body has a `Content-Length`, which cannot break.
                    pending.removeFirst()
                    gathered = nil
                    mode = .idle
                    refuseUnparsable()
                    continue
                default:
                    // After the current request: answered once it is.
                    break
                }
            }
            break
        }
        processing = false
        if passedOutsideRead, !inReadCycle {
            passedOutsideRead = false
            context.fireChannelReadComplete()
        }
        resumeReadingIfWanted()
    }

    /// A request the decoder cannot read: 400, then the connection closes.
    private func refuseUnparsable() {
        refuse(
            ProxyRefusal(
                .badRequest, code: "validation_failed", message: "The request could not be parsed", reason: "parse_error", closesConnection: true,
                context: ProxyRequestContext(
                    method: .GET, path: "", version: .http1_1, requestID: RequestLogMiddleware.newRequestID(), routeName: nil, routeIndex: nil,
                    userID: nil,
                    apiVersion: nil, keepAlive: false, hasBody: false
                )
            )
        )
    }

    /// Whether `part` can be taken now.
    private func accepts(_ part: HTTPServerRequestPart) -> Bool {
        if skipsClientEnd, case .end = part { return true }
        switch mode {
        case .idle, .gathering: return true
        case .application(let requestEnded, _): return !requestEnded
        case .exchange: return exchange?.acceptsRequestParts ?? false
        case .deciding, .answering, .tunnel, .closed: return false
        }
    }

    private func take(_ part: HTTPServerRequestPart, _ context: ChannelHandlerContext) {
        if skipsClientEnd, case .end = part {
            skipsClientEnd = false
            connectionGuard?.requestEnded()
            return
        }
        switch mode {
        case .idle:
            guard case .head(let head) = part else {
                // The decoder gives a head first; anything else means the stream is broken.
                context.close(promise: nil)
                mode = .closed
                return
            }
            connectionGuard?.requestHeadReceived()
            let facts = RequestHeadFacts(head.headers)
            if facts.isUpgrade { closeAfterResponse = true }
            let decision = EdgeProxy.decide(
                head, facts: facts, peerAddress: peerAddress(context), proxy: proxy, now: Date(), headerListLimit: headerListLimit)
            if case .application(let head) = decision, let application, let request = application.request(for: head, facts: facts) {
                gather(request, version: head.version, keepAlive: facts.keepsAlive(head))
                return
            }
            if case .application = decision {} else if !facts.hasBody { skipsClientEnd = true }
            decided(decision)
        case .application:
            pass(part, context)
        case .exchange:
            exchangeRequestPart(part)
        case .gathering:
            gatherPart(part)
        case .deciding, .answering, .tunnel, .closed:
            break
        }
    }

    /// Carries out a decision about the current request head.
    func decided(_ decision: ProxyDecision) {
        switch decision {
        case .application(let head):
            mode = .application(requestEnded: false, responseEnded: false)
            guard let context else { return }
            if let attach = attachRouterChannel {
                attachRouterChannel = nil
                do {
                    try attach(context.channel)
                } catch {
                    // Adding handlers to an open stream does not fail; if it did, the stream is reset.
                    logger.error("could not hand a stream to the router", metadata: ["gw.error": "\(type(of: error))"])
                    mode = .closed
                    context.close(promise: nil)
                    return
                }
            }
            pass(.head(head), context)
        case .refuse(let refusal):
            refuse(refusal)
        case .forward(let plan):
            forward(plan)
        case .checkRevocation(let pending):
            mode = .deciding
            guard let proxy, let context else { return }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            Task(executorPreference: taskExecutor) {
                let decision = await proxy.completeAuthorization(pending)
                eventLoop.execute {
                    let handler = bound.value
                    guard handler.mode == .deciding else { return }
                    handler.mode = .idle
                    handler.decided(decision)
                    handler.processPending()
                }
            }
        }
    }

    // MARK: Hummingbird's requests

    /// Passes a part on to Hummingbird.
    private func pass(_ part: HTTPServerRequestPart, _ context: ChannelHandlerContext) {
        if case .end = part, case .application(_, let responseEnded) = mode {
            mode = .application(requestEnded: true, responseEnded: responseEnded)
            connectionGuard?.requestEnded()
        }
        if !inReadCycle { passedOutsideRead = true }
        context.fireChannelRead(wrapInboundOut(part))
        finishApplicationRequestIfDone()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .application(let requestEnded, false) = mode else {
            // Nothing else writes through here: the gateway's own writes start below it.
            context.write(data, promise: promise)
            return
        }
        var part = unwrapOutboundIn(data)
        if case .head(var head) = part {
            // Answered before its body ended (a 413, a 401): the connection closes after the
            // answer rather than wait for the rest of a body nobody will read.
            if !requestEnded { closeAfterResponse = true }
            if closeAfterResponse {
                head.headers.replaceOrAdd(name: "Connection", value: "close")
                part = .head(head)
            }
        }
        context.write(wrapOutboundOut(part), promise: promise)
        if case .end = part {
            mode = .application(requestEnded: requestEnded, responseEnded: true)
            connectionGuard?.responseEnded()
            if requestEnded {
                finishApplicationRequestIfDone()
            } else {
                closeAfterAnswer()
            }
        }
    }

    /// Back to idle once Hummingbird's request and response are both complete.
    private func finishApplicationRequestIfDone() {
        guard case .application(true, true) = mode, let context else { return }
        mode = .idle
        if closeAfterResponse {
            closeAfterAnswer()
            return
        }
        // Hummingbird writes from its own task: take the next request after this write returns.
        context.eventLoop.assumeIsolated().execute { self.processPending() }
    }

    // MARK: Reading

    func read(context: ChannelHandlerContext) {
        if wantsRead {
            context.read()
        } else {
            readHeld = true
        }
    }

    /// Whether the client's next bytes are wanted now.
    ///
    /// While the router answers a gathered request (`answering`) reading goes on: that request is
    /// whole, so what comes next is the client's next request, kept in `pending` (and reading
    /// stops there) until the answer is written. Holding the read instead made NIO drop and
    /// restore the socket's read interest around every answer: two `epoll_ctl` calls, about 5%
    /// of the cheapest answer's time.
    private var wantsRead: Bool {
        guard pending.isEmpty else { return false }
        switch mode {
        case .idle, .application, .gathering, .answering, .tunnel, .closed: return true
        case .exchange: return exchange?.wantsClientBytes ?? true
        case .deciding: return false
        }
    }

    /// Passes on a held `read` once reading may go on.
    func resumeReadingIfWanted() {
        guard readHeld, wantsRead, let context else { return }
        readHeld = false
        context.read()
    }

    /// The TCP peer's address text, made on the connection's first request.
    private func peerAddress(_ context: ChannelHandlerContext) -> String? {
        if cachedPeerAddress == nil { cachedPeerAddress = context.channel.remoteAddress?.ipAddress }
        return cachedPeerAddress
    }

    func close(context: ChannelHandlerContext, mode closeMode: CloseMode, promise: EventLoopPromise<Void>?) {
        // Hummingbird half-closes a connection it is done with (`Connection: close`, a parse
        // error) and waits for the client to close: a client that never does would hold the
        // connection (and graceful shutdown) for ever. It lingers like the gateway's own closes.
        if closeMode == .output, mode != .closed, mode != .tunnel {
            closeAfterAnswer()
            promise?.succeed(())
            return
        }
        context.close(mode: closeMode, promise: promise)
    }

    /// How long a closing connection keeps reading what the client still sends.
    static let lingerTimeout = TimeAmount.seconds(2)

    /// Ends the connection after a complete answer: the write side is closed once the answer is
    /// out (the client sees it, then the end), and what the client still sends is read and
    /// dropped until it closes or ``lingerTimeout`` passes. Closing outright with unread bytes
    /// would reset the connection, and a reset can destroy the answer in the client's receive
    /// buffer (nginx's lingering close).
    func closeAfterAnswer() {
        guard let context else { return }
        mode = .closed
        pending.removeAll()
        let channel = context.channel
        context.flush()
        // An HTTP/2 stream has no half-close to make: the answer's END_STREAM ends our side, and
        // the stream closes itself once the client's side has ended too. Closing it now could
        // drop the answer's last frames behind an RST_STREAM; the linger bounds a client that
        // never ends its side.
        if !isHTTP2Stream { channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) } }
        context.eventLoop.scheduleTask(in: Self.lingerTimeout) { channel.close(promise: nil) }
        readHeld = false
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        exchange?.connection?.setReadingPaused(!context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }
}

extension GatewayConnectionHandler.Mode: Equatable {}

@available(*, unavailable)
extension GatewayConnectionHandler: Sendable {}
