public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization

/// An async Redis client: a pool of pipelined connections with reconnect and backoff.
///
/// Run it as a `Service` in the application's `ServiceGroup`: behind Sentinels it then watches
/// every Sentinel's failover announcements (``RedisMasterSwitch``) and moves its connections to a
/// new master the moment it takes writes; on graceful shutdown it stops taking commands and closes
/// each connection once its pending replies have arrived. Outside a service group (the admin CLI, tests) call
/// ``shutdown()`` when done.
///
/// ```swift
/// let redis = RedisClient(configuration: .init(url: try RedisURL(parsing: "redis://127.0.0.1:6379/0")), logger: logger)
/// try await redis.send(RedisCommand("SET", "greeting", "hello"))
/// let value = try await redis.send(RedisCommand("GET", "greeting")).string
/// ```
public final class RedisClient: Service, Sendable {
    /// The configuration the client was made with.
    public let configuration: RedisClientConfiguration
    private let slots: [RedisConnectionSlot]
    /// Replica acknowledgements (`WAIT`), on a connection of their own.
    private let replicaWaiter: RedisReplicaWaiter
    private let nextSlot = Atomic<Int>(0)
    private let isShutDown = Atomic<Bool>(false)
    private let sent = Atomic<Int>(0)
    private let master: RedisMasterTracker
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger

    /// How many round trips this client has made: each ``send(_:timeout:)``,
    /// ``sendReturningErrorReplies(_:timeout:)``, script call (its `NOSCRIPT` reload included) and
    /// replica acknowledgement round (the scripts of every acknowledged write waiting when it
    /// starts and their `WAIT`, in ``evaluate(_:keys:arguments:acknowledgement:)``) counts one.
    /// How tests and benchmarks count them.
    public var roundTrips: Int { sent.load(ordering: .relaxed) + replicaWaiter.rounds }

    /// Creates a client; connections are opened on first use.
    /// - Parameters:
    ///   - configuration: address, pool size, timeouts, backoff.
    ///   - eventLoopGroup: where the connections' I/O runs; NIO's shared group by default.
    ///   - logger: where connection events go (never command arguments).
    public init(
        configuration: RedisClientConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        let master = RedisMasterTracker(logger: logger)
        self.master = master
        let size = max(1, configuration.poolSize)
        let throttle = RepeatedLogThrottle(interval: .seconds(10))
        self.slots = (0..<size).map { _ in
            RedisConnectionSlot(configuration: configuration, eventLoop: eventLoopGroup.next(), master: master, logThrottle: throttle, logger: logger)
        }
        let acknowledgingLoop = eventLoopGroup.next()
        self.replicaWaiter = RedisReplicaWaiter(
            slot: RedisConnectionSlot(
                configuration: configuration, eventLoop: acknowledgingLoop, master: master, logThrottle: throttle, logger: logger),
            eventLoop: acknowledgingLoop, commandTimeout: configuration.commandTimeout)
    }

    /// Sends one command on a pooled connection and waits for its reply.
    ///
    /// Prefers a connection that is already open; when none is, connects (or fails at once while
    /// a previous attempt's backoff lasts).
    /// - Throws: ``RedisError``; an error reply becomes ``RedisError/Code/serverError``.
    @discardableResult
    public func send(_ command: RedisCommand, timeout: TimeAmount? = nil) async throws -> RESPValue {
        sent.wrappingAdd(1, ordering: .relaxed)
        return try await connection().send(command, timeout: timeout)
    }

    /// Like ``send(_:timeout:)`` but returns error replies as values (for `MULTI`/`EXEC` style callers).
    public func sendReturningErrorReplies(_ command: RedisCommand, timeout: TimeAmount? = nil) async throws -> RESPValue {
        sent.wrappingAdd(1, ordering: .relaxed)
        return try await connection().sendReturningErrorReplies(command, timeout: timeout)
    }

    /// One command on a connection the caller holds (``connection()``), counted in ``roundTrips``;
    /// error replies come back as values.
    func send(_ command: RedisCommand, on connection: RedisConnection) async throws -> RESPValue {
        sent.wrappingAdd(1, ordering: .relaxed)
        return try await connection.sendReturningErrorReplies(command)
    }

    /// Behind Sentinels, the master this client follows: the last one a Sentinel announced or the
    /// client reached (nil before either, and without Sentinels). A ``RedisStreamReader`` of the
    /// same Redis reads from it too.
    public var announcedMaster: RedisServerAddress? { master.current }

    /// Replica acknowledgement rounds sent so far (for tests).
    var acknowledgementRounds: Int { replicaWaiter.rounds }

    /// Acknowledged writes queued or in the round in flight (for tests).
    var acknowledgementsWaiting: Int { replicaWaiter.waiting }

    /// Whether a slot is making a connection now (for tests).
    var isConnecting: Bool { slots.contains(where: \.isConnecting) }

    /// A pooled connection for a caller that sends several commands on the same socket in order.
    ///
    /// A call that gets no connection counts as a failed command in `authgate_redis_errors_total`
    /// (`connection_failed` when its attempt failed, `unavailable` while a backoff lasts).
    public func connection() async throws -> RedisConnection {
        do {
            guard !isShutDown.load(ordering: .relaxed) else { throw RedisError(.shutdown, "the Redis client is shutting down") }
            let start = Int(UInt(bitPattern: nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue) % UInt(slots.count))
            for offset in 0..<slots.count {
                if let connection = slots[(start + offset) % slots.count].activeConnection { return connection }
            }
            return try await slots[start].connection()
        } catch let error as RedisError {
            RedisMetrics.failed(error.code)
            throw error
        }
    }

    /// Behind Sentinels, follows announced failovers until graceful shutdown; then drains and
    /// closes every connection.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            if let sentinel = configuration.sentinel {
                let watcher = RedisSentinelWatcher(
                    sentinel: sentinel, configuration: configuration, eventLoop: eventLoopGroup.next(), logger: logger,
                    following: { [weak self] in self?.master.current }
                ) { [weak self] announcement in
                    self?.masterSwitched(announcement)
                }
                group.addTask { await watcher.run() }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        await shutdown()
    }

    /// A Sentinel announced a new master: connections to any other node close and every slot
    /// reconnects at once, its backoff forgotten, trying the announced node first. Called for each
    /// announcement of each Sentinel.
    func masterSwitched(_ announcement: RedisMasterSwitch) {
        master.update(announcement.current, confirmed: announcement.isConfirmed, masterName: announcement.masterName)
        for slot in slots { slot.masterSwitched(to: announcement.current) }
        replicaWaiter.masterSwitched(to: announcement.current)
    }

    /// Runs a script in the next acknowledgement round (``RedisReplicaWaiter``).
    func evaluateAcknowledged(_ script: RedisScript, tail: [RedisArgument], acknowledgement: RedisReplicaAcknowledgement) async throws -> RESPValue {
        try await replicaWaiter.evaluate(script, tail: tail, acknowledgement: acknowledgement)
    }

    /// Stops taking commands and closes every connection once its pending replies have arrived.
    public func shutdown() async {
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        await withTaskGroup(of: Void.self) { group in
            for slot in slots { group.addTask { await slot.shutdown() } }
            group.addTask { await self.replicaWaiter.shutdown() }
        }
        logger.debug("redis client shut down")
    }
}
