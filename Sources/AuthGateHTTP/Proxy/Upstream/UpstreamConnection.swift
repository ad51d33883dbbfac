import AuthGateCore
import NIOCore
import NIOHTTP1

/// One kept-alive HTTP/1.1 connection to an upstream, used by one exchange at a time, only on
/// its event loop (the client connection's).
final class UpstreamConnection {
    let channel: any Channel
    let key: UpstreamConnectionPool.Key
    let handler: UpstreamChannelHandler
    /// It served an exchange before (so the upstream may have closed it meanwhile).
    var hasServed = false
    /// Small parts of the request body gathered into one (``writeBody(_:)``), not written yet.
    private var gatheredBody: ByteBuffer?

    /// Body parts smaller than this are gathered into one until it holds this many bytes (less
    /// than twice as many) before they are written; larger ones go as they come. A client's
    /// 1-byte chunks (5 bytes on the wire each) would otherwise each cost a pass through the
    /// upstream pipeline and three writes of the chunked encoder: 20,000 of them held an event
    /// loop for a second and a half (debug build), and the upstream received 20,000 chunks.
    static let gatheredBodyLimit = 8192

    init(channel: any Channel, key: UpstreamConnectionPool.Key, handler: UpstreamChannelHandler) {
        self.channel = channel
        self.key = key
        self.handler = handler
    }

    /// The limits of one exchange.
    struct Timeouts: Sendable {
        /// From the request's end until the response head.
        let head: TimeAmount
        /// Longest silence while a read is wanted.
        let idle: TimeAmount

        /// The route's `timeout` and `idle_timeout`.
        init(_ route: RouteConfiguration) {
            head = .nanoseconds(route.timeout.nanoseconds)
            idle = .nanoseconds(route.idleTimeout.nanoseconds)
        }
    }

    var isActive: Bool { channel.isActive }
    var isWritable: Bool { channel.isWritable }

    /// Starts an exchange: `delegate` will receive the response. Writes the head (not flushed).
    /// - Parameter expectsUpgrade: a WebSocket handshake, which a `101` may answer.
    func begin(_ head: HTTPRequestHead, delegate: any UpstreamExchangeDelegate, timeouts: Timeouts, expectsUpgrade: Bool = false) {
        handler.begin(delegate, headTimeout: timeouts.head, idleTimeout: timeouts.idle, expectsUpgrade: expectsUpgrade)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
    }

    /// Writes a part of the request body (not flushed): a large one as it is, small ones gathered
    /// (``gatheredBodyLimit``) and written once they make that many bytes, before a large one,
    /// and at the next ``flush()`` (the end of the client's read) or ``writeEnd()``. The bytes
    /// and their order are the client's; only the upstream's chunk boundaries differ, as HTTP
    /// allows.
    func writeBody(_ buffer: ByteBuffer) {
        guard buffer.readableBytes < Self.gatheredBodyLimit else {
            writeGatheredBody()
            channel.write(HTTPClientRequestPart.body(.byteBuffer(buffer)), promise: nil)
            return
        }
        var gathered = gatheredBody ?? channel.allocator.buffer(capacity: Self.gatheredBodyLimit)
        gatheredBody = nil
        gathered.writeImmutableBuffer(buffer)
        if gathered.readableBytes >= Self.gatheredBodyLimit {
            channel.write(HTTPClientRequestPart.body(.byteBuffer(gathered)), promise: nil)
        } else {
            gatheredBody = gathered
        }
    }

    /// Writes the request's end and flushes; the response head is due from now.
    func writeEnd() {
        writeGatheredBody()
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        handler.requestSent()
    }

    func flush() {
        writeGatheredBody()
        channel.flush()
    }

    /// Writes the gathered small parts, if any (not flushed).
    private func writeGatheredBody() {
        guard let gathered = gatheredBody else { return }
        gatheredBody = nil
        channel.write(HTTPClientRequestPart.body(.byteBuffer(gathered)), promise: nil)
    }

    /// Holds or resumes reading the response (the client's side is full, or has room again).
    func setReadingPaused(_ paused: Bool) {
        handler.setReadingPaused(paused)
    }

    /// Closes the connection; an exchange on it is failed without a callback to the caller.
    func close() {
        gatheredBody = nil
        handler.endExchange()
        channel.close(promise: nil)
    }
}

@available(*, unavailable)
extension UpstreamConnection: Sendable {}
