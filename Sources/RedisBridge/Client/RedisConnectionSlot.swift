import Logging
import NIOCore
import Synchronization

/// One place in the pool: it holds a connection, or is making one, or is waiting out a backoff.
///
/// Connecting is single-flight: callers that arrive while a connection is being made wait for that
/// attempt instead of starting their own. After a failed attempt the slot fails calls at once
/// (``RedisError/Code/unavailable``, no connect timeout to sit through) until its backoff has
/// passed, or until a Sentinel announces a new master (``masterSwitched(to:)``): the backoff
/// applies only while no reachable master is known.
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
    private let master: RedisMasterTracker
    private let logThrottle: RepeatedLogThrottle
    private let logger: Logger

    init(
        configuration: RedisClientConfiguration, eventLoop: any EventLoop, master: RedisMasterTracker, logThrottle: RepeatedLogThrottle,
        logger: Logger
    ) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.master = master
        self.logThrottle = logThrottle
        self.logger = logger
    }

    /// The open connection, if the slot has one right now.
    var activeConnection: RedisConnection? {
        state.withLock { state in
            if case .connected(let connection) = state, connection.isActive { return connection }
            return nil
        }
    }

    /// Whether a connection attempt is under way.
    var isConnecting: Bool {
        state.withLock { state in
            if case .connecting = state { return true }
            return false
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
                        .unavailable, "Redis is unreachable; next attempt in \(Self.milliseconds(until - .now())) ms (\(lastError.message))")
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

    /// A Sentinel announced `address` as the master: a connection to another node closes (the old
    /// master is dead or demoted), and a backoff ends, so the next call connects at once.
    func masterSwitched(to address: RedisServerAddress) {
        let stale: RedisConnection? = state.withLock { state in
            switch state {
            case .connected(let connection) where connection.address != address:
                state = .idle(failures: 0)
                return connection
            case .backingOff:
                state = .idle(failures: 0)
                return nil
            default:
                return nil
            }
        }
        stale?.closeNow()
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
        let announced = master.current
        do {
            let connection = try await RedisConnection.connect(
                configuration: configuration, eventLoop: eventLoop, logger: logger, preferredMaster: announced)
            if let sentinel = configuration.sentinel { master.update(connection.address, masterName: sentinel.masterName) }
            let accepted = state.withLock { state -> Bool in
                if case .shutdown = state { return false }
                state = .connected(connection)
                return true
            }
            if accepted {
                RedisMetrics.connectionAttempt(succeeded: true)
                if previousFailures > 0, let repeated = logThrottle.admit("reconnected") {
                    logger.info("reconnected to redis", metadata: ["gw.redis.address": "\(connection.address)", "gw.repeated": "\(repeated)"])
                }
                promise.succeed(connection)
            } else {
                connection.closeNow()
                promise.fail(RedisError(.shutdown, "the Redis client is shutting down"))
            }
        } catch {
            let redisError = error as? RedisError ?? RedisError(.connectionFailed, "the connection failed")
            let failures = previousFailures + 1
            RedisMetrics.connectionAttempt(succeeded: false)
            let backoff = configuration.reconnectBackoff(afterFailures: failures)
            // A master announced while this attempt was under way: the next call tries it at once.
            let masterChanged = configuration.sentinel != nil && master.current != announced
            state.withLock { state in
                if case .shutdown = state { return }
                state = masterChanged ? .idle(failures: 0) : .backingOff(until: .now() + backoff, failures: failures, lastError: redisError)
            }
            if let repeated = logThrottle.admit("connection_failed") {
                logger.warning(
                    "redis connection failed",
                    metadata: [
                        "gw.redis.address": "\(target)", "gw.redis.error": "\(redisError.message)",
                        "gw.redis.retry_in_ms": "\(Self.milliseconds(backoff))", "gw.repeated": "\(repeated)"
                    ]
                )
            }
            promise.fail(redisError)
        }
    }

    private static func value(of future: EventLoopFuture<RedisConnection>) async throws -> RedisConnection {
        do {
            return try await future.get()
        } catch let error as RedisError {
            throw error
        } catch {
            throw RedisError(.connectionFailed, "the connection failed")
        }
    }

    /// What a failed attempt tried to reach: the URL's server, or the master by its Sentinel name
    /// (the error message names the nodes).
    private var target: String {
        if let sentinel = configuration.sentinel { return "master \(sentinel.masterName) (Sentinel)" }
        return "\(RedisServerAddress(host: configuration.url.host, port: configuration.url.port))"
    }

    private static func milliseconds(_ amount: TimeAmount) -> Int64 { max(0, amount.nanoseconds / 1_000_000) }
}
