import NIOCore

/// A request body passed through while counting its bytes: iteration throws ``TooLarge`` once
/// more than `limit` bytes have arrived. It bounds bodies whose length is not announced
/// (chunked uploads) by the route's `max_body`; an announced `Content-Length` is checked before.
struct LimitedBody<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer

    /// The body went over the limit.
    struct TooLarge: Error {}

    let base: Base
    let limit: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let limit: Int
        var seen = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let buffer = try await base.next() else { return nil }
            seen += buffer.readableBytes
            if seen > limit { throw TooLarge() }
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), limit: limit)
    }
}
