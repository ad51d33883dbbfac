import Logging
import NIOCore
import Synchronization

/// One place in the pool: it holds a connection, or is making one, or is waiting out a backoff.
///
/// Connecting is single-flight: callers that arrive while a connection is being made wait for that
/// attempt instead of starting their own. After a failed attempt the slot fails calls at once
/// (no connect timeout to sit through) until its backoff has passed.
final class RedisConnectionSlot: Sendable {
    private enum State {
        case idle(failures: Int)
        case connecting(EventLoopFuture<RedisConnection>)
        case connected(RedisConnection)
        case backingOff(until: NIODeadline, failures: Int, lastError: RedisError)
        case shutdown
    }

    private let state: Mutex<State> = Mutex(.idle(failures: 0))
    private let configuration: RedisClientConfiguration
    private let eventLoop: any EventLoop
    private let logger: Logger

    init(configuration: RedisClientConfiguration, eventLoop: any EventLoop, logger: Logger) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// The open connection, if the slot has one right now.
    var activeConnection: RedisConnection? {
        state.withLock { state in
            if case .connected(let connection) = state, connection.isActive { return connection }
            return nil
        }
    }

    /// An open connection: the current one, or a new one made now (or by an attempt under way).
    func connection() async throws -> RedisConnection {
        enum Step {
            case ready(RedisConnection)
            case wait(EventLoopFuture<RedisConnection>)
            case connect(EventLoopPromise<RedisConnection>, failures: Int)
        }
        let step: Step = try state.withLock { state in
            switch state {
            case .connected(let connection) where connection.isActive:
                return .ready(connection)
            case .connected:
                let promise = eventLoop.makePromise(of: RedisConnection.self)
                state = .connecting(promise.futureResult)
                return .connect(promise, failures: 0)
            case .connecting(let future):
                return .wait(future)
            case .backingOff(let until, let failures, let lastError):
                if NIODeadline.now() < until {
                    throw RedisError(
                        .connectionFailed, "Redis is unreachable; next attempt in \(Self.milliseconds(until - .now())) ms (\(lastError.message))")
                }
                let promise = eventLoop.makePromise(of: RedisConnection.self)
                state = .connecting(promise.futureResult)
                return .connect(promise, failures: failures)
            case .idle(let failures):
                let promise = eventLoop.makePromise(of: RedisConnection.self)
                state = .connecting(promise.futureResult)
                return .connect(promise, failures: failures)
            case .shutdown:
                throw RedisError(.shutdown, "the Redis client is shutting down")
            }
        }
        switch step {
        case .ready(let connection):
            return connection
        case .wait(let future):
            return try await Self.value(of: future)
        case .connect(let promise, let failures):
            await connect(completing: promise, previousFailures: failures)
            return try await Self.value(of: promise.futureResult)
        }
    }

    /// Closes the connection after its pending replies and refuses further use.
    func shutdown() async {
        let previous = state.withLock { state in
            let previous = state
            state = .shutdown
            return previous
        }
        switch previous {
        case .connected(let connection):
            await connection.close()
        case .connecting(let future):
            if let connection = try? await future.get() { await connection.close() }
        case .idle, .backingOff, .shutdown:
            break
        }
    }

    private func connect(completing promise: EventLoopPromise<RedisConnection>, previousFailures: Int) async {
        do {
            let connection = try await RedisConnection.connect(configuration: configuration, eventLoop: eventLoop, logger: logger)
            let accepted = state.withLock { state -> Bool in
                if case .shutdown = state { return false }
                state = .connected(connection)
                return true
            }
            if accepted {
                if previousFailures > 0 { logger.info("reconnected to redis", metadata: ["gw.redis.address": "\(configuration.url)"]) }
                promise.succeed(connection)
            } else {
                connection.closeNow()
                promise.fail(RedisError(.shutdown, "the Redis client is shutting down"))
            }
        } catch {
            let redisError = error as? RedisError ?? RedisError(.connectionFailed, "\(error)")
            let failures = previousFailures + 1
            let backoff = configuration.reconnectBackoff(afterFailures: failures)
            state.withLock { state in
                if case .shutdown = state { return }
                state = .backingOff(until: .now() + backoff, failures: failures, lastError: redisError)
            }
            logger.warning(
                "redis connection failed",
                metadata: [
                    "gw.redis.address": "\(configuration.url)", "gw.redis.error": "\(redisError.message)",
                    "gw.redis.retry_in_ms": "\(Self.milliseconds(backoff))"
                ]
            )
            promise.fail(redisError)
        }
    }

    private static func value(of future: EventLoopFuture<RedisConnection>) async throws -> RedisConnection {
        do {
            return try await future.get()
        } catch let error as RedisError {
            throw error
        } catch {
            throw RedisError(.connectionFailed, "\(error)")
        }
    }

    private static func milliseconds(_ amount: TimeAmount) -> Int64 { max(0, amount.nanoseconds / 1_000_000) }
}
