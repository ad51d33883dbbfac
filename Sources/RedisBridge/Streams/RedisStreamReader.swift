public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization

/// Tails one Redis stream with `XREAD BLOCK` on a connection of its own, and hands each batch of
/// entries to a handler, in order.
///
/// After a lost connection it reconnects with backoff and resumes from the last entry it
/// delivered, so nothing the stream still holds is skipped and nothing is delivered twice (what
/// the stream's writers trimmed meanwhile is gone: they must keep what readers need, as the
/// revocation stream keeps every entry for a token's lifetime). Starting at ``Start/latest``
/// resolves the stream's current last id once, on the first successful read, so even entries added
/// while the first connection was being made are not missed after that point.
///
/// Behind Sentinels, given the master its owner's client follows (``RedisClient/announcedMaster``),
/// it moves to that master between reads when a failover names another node than the one it reads
/// from: a demoted master still answers `XREAD`, and one cut off from the Sentinels but not from
/// this reader would answer it for ever with no new entries, every read looking fresh.
///
/// Run it as a `Service`; graceful shutdown closes the connection, which ends a blocking read at once.
public final class RedisStreamReader: Service, Sendable {
    /// Where reading starts.
    public enum Start: Sendable, Hashable {
        /// Only entries added after the reader first reaches Redis.
        case latest
        /// Every entry in the stream.
        case beginning
        /// Entries after this id.
        case after(String)
    }

    private struct State {
        var connection: RedisConnection?
        var lastID: String?
        var lastContact: NIODeadline?
        var isStopped = false
    }

    private let clientConfiguration: RedisClientConfiguration
    private let stream: String
    private let start: Start
    private let blockTimeout: TimeAmount
    private let batchSize: Int
    private let eventLoop: any EventLoop
    private let logger: Logger
    private let handler: @Sendable ([RedisStreamEntry]) async -> Void
    private let master: (@Sendable () -> RedisServerAddress?)?
    private let state: Mutex<State>
    /// While Redis is down a read is retried after each backoff (by default 50 ms doubling to 2 s): one line
    /// per 10 s says so.
    private let outageLog = RepeatedLogThrottle(interval: .seconds(10))

    /// Creates a reader.
    /// - Parameters:
    ///   - configuration: how to reach Redis (the pool size is ignored: the reader has one connection).
    ///   - stream: the stream key.
    ///   - start: where to start reading.
    ///   - blockTimeout: how long one `XREAD` blocks waiting for entries.
    ///   - batchSize: the most entries one `XREAD` returns.
    ///   - master: the master to read from when known (the owner's client's
    ///     ``RedisClient/announcedMaster``); checked before every read.
    ///   - handler: receives each non-empty batch; the next read starts after it returns.
    public init(
        configuration: RedisClientConfiguration,
        stream: String,
        start: Start = .latest,
        blockTimeout: TimeAmount = .milliseconds(500),
        batchSize: Int = 256,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        master: (@Sendable () -> RedisServerAddress?)? = nil,
        handler: @escaping @Sendable ([RedisStreamEntry]) async -> Void
    ) {
        self.master = master
        self.clientConfiguration = configuration
        self.stream = stream
        self.start = start
        self.blockTimeout = blockTimeout
        self.batchSize = batchSize
        self.eventLoop = eventLoopGroup.next()
        self.logger = logger
        self.handler = handler
        var initial = State()
        switch start {
        case .beginning: initial.lastID = "0-0"
        case .after(let id): initial.lastID = id
        case .latest: initial.lastID = nil
        }
        self.state = Mutex(initial)
    }

    /// The id of the last entry delivered (or the resolved start position).
    public var lastDeliveredID: String? { state.withLock { $0.lastID } }

    /// When the reader last heard from Redis (a read returned, with or without entries).
    /// Callers use it to tell how fresh their view of the stream is.
    public var lastContact: NIODeadline? { state.withLock { $0.lastContact } }

    /// The node the reader's connection reached, while it has one.
    public var connectedAddress: RedisServerAddress? { state.withLock { $0.connection?.address } }

    /// Reads until graceful shutdown or cancellation.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await readLoop()
            } onCancel: {
                self.stop()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    /// Stops reading: the current blocking read ends and ``run()`` returns.
    public func stop() {
        let connection = state.withLock { state -> RedisConnection? in
            state.isStopped = true
            return state.connection
        }
        connection?.closeNow()
    }

    private var isStopped: Bool { state.withLock { $0.isStopped } }

    private func readLoop() async {
        var failures = 0
        while !isStopped {
            do {
                let connection = try await openConnection()
                let lastID = try await resolvedLastID(using: connection)
                let reply = try await connection.send(
                    RedisCommand(
                        "XREAD", "COUNT", .integer(Int64(batchSize)), "BLOCK", .integer(blockTimeout.nanoseconds / 1_000_000),
                        "STREAMS", .string(stream), .string(lastID)
                    ),
                    timeout: blockTimeout.addingSaturated(clientConfiguration.commandTimeout)
                )
                state.withLock { $0.lastContact = .now() }
                if failures > 0 {
                    logger.info("redis stream reader resumed", metadata: ["gw.redis.stream": "\(stream)", "gw.redis.after_id": "\(lastID)"])
                }
                failures = 0
                let entries = try Self.entries(inStream: stream, from: reply)
                guard let last = entries.last else { continue }
                await handler(entries)
                state.withLock { $0.lastID = last.id }
            } catch {
                let connection = state.withLock { state -> RedisConnection? in
                    defer { state.connection = nil }
                    return state.connection
                }
                connection?.closeNow()
                if isStopped { break }
                failures += 1
                let backoff = clientConfiguration.reconnectBackoff(afterFailures: failures)
                if let repeated = outageLog.admit("read") {
                    logger.warning(
                        "redis stream read failed; retrying",
                        metadata: [
                            "gw.redis.stream": "\(stream)", "gw.redis.error": "\(error)",
                            "gw.redis.retry_in_ms": "\(backoff.nanoseconds / 1_000_000)", "gw.repeated": "\(repeated)"
                        ]
                    )
                }
                do {
                    try await Task.sleep(nanoseconds: UInt64(max(0, backoff.nanoseconds)))
                } catch {
                    break
                }
            }
        }
        let connection = state.withLock { state -> RedisConnection? in
            defer { state.connection = nil }
            return state.connection
        }
        connection?.closeNow()
    }

    private func openConnection() async throws -> RedisConnection {
        let announced = master?()
        if let connection = state.withLock({ $0.connection }), connection.isActive {
            guard let announced, announced != connection.address else { return connection }
            // A failover named another master: read there from now on, after the last entry delivered.
            logger.info(
                "redis stream reader follows the master",
                metadata: ["gw.redis.stream": "\(stream)", "gw.redis.from": "\(connection.address)", "gw.redis.to": "\(announced)"])
            state.withLock { $0.connection = nil }
            connection.closeNow()
        }
        let connection = try await RedisConnection.connect(
            configuration: clientConfiguration, eventLoop: eventLoop, logger: logger, preferredMaster: announced)
        let stopped = state.withLock { state -> Bool in
            if state.isStopped { return true }
            state.connection = connection
            return false
        }
        if stopped {
            connection.closeNow()
            throw RedisError(.shutdown, "the stream reader is stopping")
        }
        return connection
    }

    private func resolvedLastID(using connection: RedisConnection) async throws -> String {
        if let lastID = state.withLock({ $0.lastID }) { return lastID }
        let reply = try await connection.send(RedisCommand("XREVRANGE", .string(stream), "+", "-", "COUNT", 1))
        let id = try RedisStreamEntry.entries(from: reply).first?.id ?? "0-0"
        state.withLock { state in
            if state.lastID == nil { state.lastID = id }
        }
        return id
    }

    /// The entries for `stream` in an `XREAD` reply (`[[stream, [entries]]]`, or null on timeout).
    static func entries(inStream stream: String, from reply: RESPValue) throws -> [RedisStreamEntry] {
        guard let streams = reply.array else {
            if reply.isNull { return [] }
            throw RedisError(.unexpectedReply, "unexpected XREAD reply \(reply)")
        }
        for item in streams {
            guard let pair = item.array, pair.count == 2 else { throw RedisError(.unexpectedReply, "unexpected XREAD reply \(reply)") }
            if pair[0].string == stream { return try RedisStreamEntry.entries(from: pair[1]) }
        }
        return []
    }
}
