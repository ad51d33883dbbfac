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
    /// Small parts of the request body gathered into fewer (``writeBody(_:)``). Not checked for
    /// exclusive access at run time (a check per body part): the gatherer's methods call nothing
    /// that could reach this connection, so no access to it can overlap another.
    @exclusivity(unchecked) private var requestBody = BodyPartGatherer()

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

    /// Writes a part of the request body (not flushed): small parts are gathered
    /// (``BodyPartGatherer``) and written once they make 8 KiB, before a large one, and at the
    /// next ``flush()`` (the end of the client's read) or ``writeEnd()``.
    func writeBody(_ buffer: ByteBuffer) {
        let (gathered, large) = requestBody.take(buffer, allocator: channel.allocator)
        if let gathered { writeBodyPart(gathered) }
        if let large { writeBodyPart(large) }
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
        if let gathered = requestBody.drain() { writeBodyPart(gathered) }
    }

    private func writeBodyPart(_ buffer: ByteBuffer) {
        channel.write(HTTPClientRequestPart.body(.byteBuffer(buffer)), promise: nil)
    }

    /// Holds or resumes reading the response (the client's side is full, or has room again).
    func setReadingPaused(_ paused: Bool) {
        handler.setReadingPaused(paused)
    }

    /// Closes the connection; an exchange on it is failed without a callback to the caller.
    func close() {
        requestBody.discard()
        handler.endExchange()
        channel.close(promise: nil)
    }
}

@available(*, unavailable)
extension UpstreamConnection: Sendable {}
