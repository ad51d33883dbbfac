import AuthGateCore
import Logging
import NIOCore
import NIOHTTP1

/// The first handler of every client connection, below HTTP: refuses connections over
/// `server.max_connections` (counted; HTTP/1.1's `503` or HTTP/2's GOAWAY, whichever the client
/// speaks, ``ConnectionRefusal``, then a close), and closes connections whose client
/// is too slow (``ClientConnectionDeadlines``: the request head timeout, the keep-alive timeout,
/// the client idle timeout), or whose request body holds more chunked framing than data allows
/// (``RequestBodyFraming``). ``GatewayConnectionHandler`` tells it where each request stands.
final class ClientConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let limiter: BoundedCounter
    private let ticker: ClientConnectionTicker
    private let timeouts: ClientConnectionDeadlines.Timeouts
    private let logger: Logger
    private var deadlines: ClientConnectionDeadlines?
    private var context: ChannelHandlerContext?
    private var counted = false
    /// A request head has arrived, or the connection speaks HTTP/2: the handlers serving it close
    /// it on graceful shutdown. Before that it may not even have them yet (the first bytes tell
    /// HTTP/1 from HTTP/2, ALPN awaits the handshake), and this guard closes it.
    private var served = false
    /// Refused: once the client's first bytes tell which protocol it speaks, the answer is
    /// written and the write side closed; what the client still sends is read and dropped until
    /// it closes (closing with unread bytes would reset the connection and lose the answer), for
    /// at most ``refusalLinger`` from the start.
    private var refusal: ConnectionRefusal?
    private let http2: Bool
    /// The framing of the request body being read; once it was too much, what the client still
    /// sends is dropped (as NIO's decoder stops at bytes it cannot parse).
    private var framing = RequestBodyFraming()
    private var framingRefused = false

    /// How long a refused connection is kept for the client to read its answer.
    static let refusalLinger = TimeAmount.seconds(1)

    /// - Parameter http2: whether the listener serves HTTP/2 (`server.http2.enabled`): a refused
    ///   HTTP/2 client is then answered in HTTP/2.
    init(
        limiter: BoundedCounter, ticker: ClientConnectionTicker, timeouts: ClientConnectionDeadlines.Timeouts, http2: Bool,
        logger: Logger
    ) {
        self.http2 = http2
        self.limiter = limiter
        self.ticker = ticker
        self.timeouts = timeouts
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { opened(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        opened(context)
        context.fireChannelActive()
    }

    private func opened(_ context: ChannelHandlerContext) {
        guard deadlines == nil, !counted else { return }
        guard refusal == nil else { return }
        guard limiter.tryTake() else {
            var refusal = ConnectionRefusal(http2: http2)
            GatewayMetrics.clientConnectionRefused()
            // A flood of connections is what the limit is for: one line per 10 s, with a count.
            if let repeated = OutageLog.admit("max_connections") {
                logger.notice(
                    "connection refused: server.max_connections reached", metadata: ["gw.limit": "\(limiter.limit)", "gw.repeated": "\(repeated)"])
            }
            let channel = context.channel
            context.eventLoop.scheduleTask(in: Self.refusalLinger) { channel.close(promise: nil) }
            let answer = refusal.opened()
            self.refusal = refusal
            if let answer { refuse(context, with: answer) }
            return
        }
        counted = true
        GatewayMetrics.clientConnections(open: limiter.count)
        deadlines = ClientConnectionDeadlines(timeouts: timeouts, now: .now())
        ticker.add(self)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
        self.context = nil
    }

    private func finish() {
        guard counted else { return }
        counted = false
        limiter.giveBack()
        GatewayMetrics.clientConnections(open: limiter.count)
        ticker.remove(self)
        deadlines = nil
    }

    /// Writes a refused connection's answer, then closes its write side.
    private func refuse(_ context: ChannelHandlerContext, with answer: ConnectionRefusal.Answer) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: answer.bytes))).assumeIsolated().whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard counted else {
            // A refused connection's bytes are dropped, once the first have chosen its answer.
            if var refusal {
                let answer = refusal.received(unwrapInboundIn(data).readableBytesView)
                self.refusal = refusal
                if let answer { refuse(context, with: answer) }
            }
            return
        }
        guard !framingRefused else { return }
        if framing.exceeded {
            framingRefused = true
            context.fireErrorCaught(RequestBodyFraming.Exceeded())
            return
        }
        framing.read(unwrapInboundIn(data).readableBytes)
        deadlines?.bytesRead(now: .now())
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        deadlines?.readRequested(now: .now())
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if refusal != nil, case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
            return
        }
        if event is ChannelShouldQuiesceEvent, !served {
            // Graceful shutdown before the first request: nothing is being served, so the
            // connection closes now instead of holding the shutdown until request_head_timeout.
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        deadlines?.writabilityChanged(isWritable: context.channel.isWritable, now: .now())
        context.fireChannelWritabilityChanged()
    }

    // MARK: What the request handler reports

    func requestHeadReceived() {
        served = true
        deadlines?.headReceived()
    }
    func requestEnded() { deadlines?.requestEnded() }
    func responseEnded() { deadlines?.responseEnded(now: .now()) }
    func becameTunnel() {
        deadlines?.becameTunnel()
        framing.stop()
    }
    /// HTTP/2: many requests at once, so none of the per-request deadlines apply; the HTTP/2
    /// connection manager closes the connection once idle. Its bodies have no chunked framing.
    func becameMultiplexed() {
        served = true
        deadlines?.becameTunnel()
        framing.stop()
    }

    /// The decoder gave `part` (as it decodes, before the part is taken).
    func decoded(_ part: HTTPServerRequestPart) {
        switch part {
        case .head: framing.headDecoded()
        case .body(let buffer): framing.dataDecoded(buffer.readableBytes)
        case .end: framing.stop()
        }
    }

    // MARK: Deadlines

    /// Closes the connection when one of its deadlines has passed (called by the loop's ticker).
    func check(now: NIODeadline) {
        guard let expiry = deadlines?.expired(now: now), let context else { return }
        deadlines = nil
        GatewayMetrics.clientTimeout(kind: expiry.rawValue)
        logger.debug("client connection timed out", metadata: ["gw.timeout": "\(expiry.rawValue)"])
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension ClientConnectionGuard: Sendable {}
