import AuthGateCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Synchronization

/// One kept-alive HTTP/1.1 connection to an upstream, used by one exchange at a time.
final class UpstreamConnection: Sendable {
    let channel: any Channel
    let key: UpstreamConnectionPool.Key
    private let handler: NIOLoopBound<UpstreamResponseHandler>

    init(channel: any Channel, key: UpstreamConnectionPool.Key, handler: NIOLoopBound<UpstreamResponseHandler>) {
        self.channel = channel
        self.key = key
        self.handler = handler
    }

    /// The limits of one exchange.
    struct Timeouts: Sendable {
        /// Until the response head.
        let head: TimeAmount
        /// Longest silence while a read is wanted.
        let idle: TimeAmount

        /// The route's `timeout` and `idle_timeout`.
        init(_ route: RouteConfiguration) {
            head = .nanoseconds(route.timeout.nanoseconds)
            idle = .nanoseconds(route.idleTimeout.nanoseconds)
        }
    }

    /// Sends a bodiless request on the connection's event loop (the caller is on it) and returns
    /// the future response start.
    func start(head: HTTPRequestHead, timeouts: Timeouts, onEnd: @escaping @Sendable (Bool) -> Void) -> EventLoopFuture<UpstreamResponseHandler.Start> {
        channel.eventLoop.preconditionInEventLoop()
        let promise = channel.eventLoop.makePromise(of: UpstreamResponseHandler.Start.self)
        send(head, endsRequest: true, promise: promise, timeouts: timeouts, onEnd: onEnd)
        return promise.futureResult
    }

    /// On the event loop: starts the exchange in the handler, then writes the head (and the end
    /// of a bodiless request) in one flush.
    private func send(
        _ head: HTTPRequestHead, endsRequest: Bool, promise: EventLoopPromise<UpstreamResponseHandler.Start>, timeouts: Timeouts,
        onEnd: @escaping @Sendable (Bool) -> Void
    ) {
        handler.value.begin(head: promise, headTimeout: timeouts.head, idleTimeout: timeouts.idle, keepAlive: head.isKeepAlive, onEnd: onEnd)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if endsRequest {
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        } else {
            channel.flush()
        }
    }

    /// Sends `head` and `body` (streamed with back-pressure, while the response may already be
    /// coming) and returns once the response head is in. `onEnd` is called on the connection's
    /// event loop when the exchange is over, with whether the connection can serve another.
    /// - Throws: ``UpstreamError``, or the body's own error (the route's `max_body`, a client that
    ///   went away) when the upload failed first.
    func exchange<Body: AsyncSequence & Sendable>(
        head: HTTPRequestHead, body: Body?, timeouts: Timeouts, onEnd: @escaping @Sendable (Bool) -> Void
    ) async throws -> UpstreamResponseHandler.Start where Body.Element == ByteBuffer {
        let channel = self.channel
        let promise = channel.eventLoop.makePromise(of: UpstreamResponseHandler.Start.self)
        let endsRequest = body == nil
        channel.eventLoop.execute {
            self.send(head, endsRequest: endsRequest, promise: promise, timeouts: timeouts, onEnd: onEnd)
        }
        let uploadFailure = UploadFailure()
        let upload = body.map { body in
            Task {
                do {
                    for try await buffer in body {
                        try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(buffer))).get()
                    }
                    try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
                } catch {
                    uploadFailure.record(error)
                    channel.close(promise: nil)
                }
            }
        }
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                upload?.cancel()
                channel.close(promise: nil)
            }
        } catch {
            if let failure = uploadFailure.first, !(failure is ChannelError) { throw failure }
            throw error
        }
    }
}

/// The first error of a request body's upload, which decides the answer when the exchange fails.
private final class UploadFailure: Sendable {
    private let error = Mutex<(any Error)?>(nil)

    func record(_ error: any Error) {
        self.error.withLock { $0 = $0 ?? error }
    }

    var first: (any Error)? { error.withLock { $0 } }
}
