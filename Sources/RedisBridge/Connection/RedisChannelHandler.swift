import Logging
import NIOCore

/// The channel handler of one Redis connection: writes commands, feeds inbound bytes to hiredis,
/// and completes each command's promise with its reply, in order.
///
/// It only carries out the actions of ``RedisCommandStateMachine``. It lives on its channel's
/// event loop and is never shared across threads.
final class RedisChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    private var stateMachine = RedisCommandStateMachine<EventLoopPromise<RESPValue>>()
    private let reader: HiredisReader
    private var timer: Scheduled<Void>?
    private let logger: Logger
    private let closeReason: RedisCloseReason
    /// Where pushed messages go once the connection subscribed.
    private var pushes: AsyncStream<RESPValue>.Continuation?

    init(maxReplyBytes: Int, closeReason: RedisCloseReason, logger: Logger) throws {
        self.reader = try HiredisReader(maxReplyBytes: maxReplyBytes)
        self.closeReason = closeReason
        self.logger = logger
    }

    // MARK: outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        switch stateMachine.sendCommand(request.promise, deadline: request.deadline) {
        case .write(let scheduleTimer):
            context.write(wrapOutboundOut(request.encodedCommand), promise: promise)
            if let scheduleTimer { armTimer(at: scheduleTimer, context: context) }
        case .fail(let pending, let error):
            pending.fail(error)
            promise?.fail(error)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let event = event as? RedisPushEvent {
            pushes = event.continuation
            stateMachine.acceptPushes()
            promise?.succeed()
            return
        }
        guard event is RedisGracefulCloseEvent else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        switch stateMachine.gracefulClose() {
        case .closeNow:
            cancelTimer()
            context.close(promise: nil)
        case .waitForDrain, .none:
            break
        }
        promise?.succeed()
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            reader.feed(unwrapInboundIn(data))
            while let reply = try reader.nextReply() {
                switch stateMachine.receivedReply(reply) {
                case .succeed(let pending, let value):
                    pending.succeed(value)
                case .succeedAndClose(let pending, let value):
                    closeReason.markClosing()
                    pending.succeed(value)
                    cancelTimer()
                    context.close(promise: nil)
                    return
                case .failAllAndClose(let pending, let error):
                    failAndClose(pending, error, context: context)
                    return
                case .ignore:
                    return
                case .push(let value):
                    pushes?.yield(value)
                }
            }
        } catch {
            let redisError = error as? RedisError ?? RedisError(.protocolError, "\(error)")
            if case .failAllAndClose(let pending, let error) = stateMachine.errorCaught(redisError) {
                failAndClose(pending, error, context: context)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let redisError = error as? RedisError ?? RedisError(.connectionClosed, Self.describe(socketError: error))
        closeReason.record(redisError)
        if case .failAllAndClose(let pending, let error) = stateMachine.errorCaught(redisError) {
            failAndClose(pending, error, context: context)
        }
    }

    /// A socket or TLS error in words, without library internals (a TLS 1.3 server that wants a
    /// client certificate says so only after the handshake, on the first read).
    static func describe(socketError error: any Error) -> String {
        if let ioError = error as? IOError { return "socket error: \(RedisConnectError.describe(errno: ioError.errnoCode))" }
        return TLSClientConfiguration.describe(sessionError: error) ?? "socket error: \(error)"
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        pushes?.finish()
        for pending in stateMachine.channelInactive() {
            pending.fail(RedisError(.connectionClosed, "the connection to Redis closed before the reply arrived"))
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
        pushes?.finish()
        for pending in stateMachine.channelInactive() {
            pending.fail(RedisError(.connectionClosed, "the connection to Redis closed before the reply arrived"))
        }
    }

    // MARK: deadlines

    private func armTimer(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            loopBoundSelf.value.timerFired(context: loopBoundContext.value)
        }
    }

    private func timerFired(context: ChannelHandlerContext) {
        timer = nil
        switch stateMachine.timerFired(now: context.eventLoop.now) {
        case .none:
            break
        case .reschedule(let deadline):
            armTimer(at: deadline, context: context)
        case .failAllAndClose(let pending, let error):
            logger.warning("redis command deadline passed; closing connection", metadata: ["gw.redis.pending": "\(pending.count)"])
            failAndClose(pending, error, context: context)
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }

    private func failAndClose(_ pending: [EventLoopPromise<RESPValue>], _ error: RedisError, context: ChannelHandlerContext) {
        cancelTimer()
        // Before the callers hear of it: one that sends its next command at once must get a new
        // connection, not this one, which closes only after these promises have run.
        closeReason.record(error)
        for promise in pending { promise.fail(error) }
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension RedisChannelHandler: Sendable {}
