import NIOCore

/// A command on its way into the pipeline: its RESP bytes, the promise for its reply, and the
/// time by which the reply must arrive.
struct RedisRequest: Sendable {
    let encodedCommand: ByteBuffer
    let promise: EventLoopPromise<RESPValue>
    let deadline: NIODeadline
}

/// Sent down the pipeline to ask the handler to stop taking commands and close once drained.
struct RedisGracefulCloseEvent: Sendable {}

/// Sent down the pipeline before `SUBSCRIBE`: messages the server pushes from then on go to
/// `continuation`, which finishes when the connection closes.
struct RedisPushEvent: Sendable {
    let continuation: AsyncStream<RESPValue>.Continuation
}
