import Foundation
import Logging
public import RedisBridge

/// One Redis master, one or more replicas (all with the append-only file) and three Sentinels,
/// all real processes on loopback ports, for failover tests.
public struct SentinelCluster: Sendable {
    public let master: RedisServerProcess
    /// The replicas; ``replica`` is the first.
    public let replicas: [RedisServerProcess]
    public var replica: RedisServerProcess { replicas[0] }
    public let sentinels: [RedisServerProcess]
    public static let masterName = "authgate-test"

    /// Where the client finds the master.
    public var configuration: RedisSentinelConfiguration {
        RedisSentinelConfiguration(masterName: Self.masterName, nodes: sentinels.map { .init(host: "127.0.0.1", port: $0.port) })
    }

    /// Starts the processes and waits until the Sentinels could fail over.
    /// - Parameters:
    ///   - replicaCount: replicas of the master (two keep one replica behind the new master after
    ///     a failover, which writes acknowledged by a replica need). A failover promotes the first;
    ///     the others are never promoted, so a test sees one failover, the one it causes.
    ///   - masterArguments: more `redis-server` arguments for the first master.
    public static func start(replicaCount: Int = 1, masterArguments: [String] = []) async throws -> SentinelCluster {
        let master = try await RedisServerProcess.start(extraArguments: ["--appendonly", "yes", "--appendfsync", "always"] + masterArguments)
        var replicas: [RedisServerProcess] = []
        for index in 0..<max(1, replicaCount) {
            // Only the first replica may be promoted (`replica-priority 0` on the others): once it
            // is master, the Sentinels have no one to fail it over to. On a host busy enough to
            // hold a process off the CPU for `down-after-milliseconds`, a Sentinel can judge the
            // new master down and fail over a second time; a clean-clone CI run saw that (two
            // switches, the remaining replica promoted with no replica of its own, acknowledged
            // writes refused for ten seconds until the Sentinels made the first one its replica).
            let priority = index == 0 ? [] : ["--replica-priority", "0"]
            replicas.append(
                try await RedisServerProcess.start(
                    extraArguments: ["--appendonly", "yes", "--replicaof", "127.0.0.1", String(master.port)] + priority))
        }
        var sentinels: [RedisServerProcess] = []
        for _ in 0..<3 { sentinels.append(try await RedisServerProcess.startSentinel(masterName: masterName, masterPort: master.port, quorum: 2)) }
        let cluster = SentinelCluster(master: master, replicas: replicas, sentinels: sentinels)
        try await cluster.waitUntil("the replicas are in sync and every Sentinel has heard from them and knows the other Sentinels") {
            for replica in replicas where !(try await info(replica.port, "replication").contains("master_link_status:up")) { return false }
            for sentinel in sentinels {
                let known = try await command(sentinel.port, RedisCommand("SENTINEL", "replicas", .string(masterName))).array ?? []
                let others = try await command(sentinel.port, RedisCommand("SENTINEL", "sentinels", .string(masterName))).array?.count ?? 0
                // A Sentinel lists a replica as soon as the master's INFO names it, but promotes it
                // only once it has the replica's own INFO and judges it up.
                let heard = known.map(fields).filter(isHeardReplica)
                if heard.count < replicas.count || others < 2 { return false }
            }
            return true
        }
        return cluster
    }

    /// The fields of one entry of a `SENTINEL replicas` or `SENTINEL sentinels` reply (a flat
    /// array of names and values).
    private static func fields(_ entry: RESPValue) -> [String: String] {
        let flat = entry.array?.map { $0.string ?? "" } ?? []
        return Dictionary(stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }, uniquingKeysWith: { first, _ in first })
    }

    /// True when a Sentinel has the replica's own `INFO` (its run id) and judges it up over a live
    /// link (no `s_down` or `disconnected` flag).
    private static func isHeardReplica(_ fields: [String: String]) -> Bool {
        let runID = fields["runid"] ?? ""
        return !runID.isEmpty && fields["flags"] == "slave"
    }

    /// Asks the first Sentinel for a manual failover, which promotes the first replica. A Sentinel
    /// answers `NOGOODSLAVE` and starts nothing while no replica qualifies in its own view (its
    /// last `INFO` from the replica too old, the replica judged down, the link to it
    /// reconnecting), so that answer is waited out; a clean-clone CI run failed on it with the
    /// failover asked for at once. Any other error is thrown.
    public func failOver() async throws {
        var failure: (any Error)?
        try await waitUntil("the first Sentinel starts a failover") {
            do {
                _ = try await Self.command(sentinels[0].port, RedisCommand("SENTINEL", "FAILOVER", .string(Self.masterName)))
            } catch let error as RedisError where error.code == .serverError && error.message.hasPrefix("NOGOODSLAVE") {
                return false
            } catch {
                failure = error
            }
            return true
        }
        if let failure { throw failure }
    }

    /// Each process's own log (Sentinels log every failover event: `+sdown`, `+odown`, elections,
    /// `+promoted-slave`, `+switch-master`), for a test to print when a failover went other than
    /// it expected; read before ``stop()``, which removes the files.
    public func logs() -> String {
        let named =
            [("master", master)] + replicas.enumerated().map { ("replica \($0.offset)", $0.element) }
            + sentinels.enumerated().map { ("sentinel \($0.offset)", $0.element) }
        return named.map { name, process in
            let text = (try? String(contentsOf: process.directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? "(no log)"
            return "--- \(name) (port \(process.port)) ---\n\(text)"
        }.joined(separator: "\n")
    }

    public func stop() async {
        for process in sentinels + replicas + [master] { await process.stop() }
    }

    /// Polls `condition` until it holds, for up to 30 s (``AuthGateTestSupport/waitUntil(_:deadline:_:)``).
    public func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        try await AuthGateTestSupport.waitUntil(what, deadline: .seconds(30), condition)
    }

    /// Sends one command to the server on `port` over a connection of its own.
    public static func command(_ port: Int, _ command: RedisCommand) async throws -> RESPValue {
        let client = RedisClient(
            configuration: .init(url: RedisURL(host: "127.0.0.1", port: port), poolSize: 1, clientName: nil), logger: Logger(label: "sentinel-test"))
        do {
            let reply = try await client.send(command)
            await client.shutdown()
            return reply
        } catch {
            await client.shutdown()
            throw error
        }
    }

    /// Waits until every replica has everything the master had when this was called. Writes may
    /// go on meanwhile: a replica is caught up once its offset reaches the master's offset read at
    /// the start (waiting for the offsets to be equal never ends while clients keep writing, and
    /// failed a run under load).
    public func waitForReplication() async throws {
        var target: Int?
        try await waitUntil("the master's replication offset read") {
            target = Self.infoInteger(try await Self.info(master.port, "replication"), "master_repl_offset")
            return target != nil
        }
        guard let target else { return }
        try await waitUntil("the replicas caught up") {
            for replica in replicas {
                guard let reached = Self.infoInteger(try await Self.info(replica.port, "replication"), "slave_repl_offset"), reached >= target else {
                    return false
                }
            }
            return true
        }
    }

    /// When a failover's steps were seen from outside, on the caller's clock.
    public struct FailoverTimes: Sendable {
        /// The first replica answered `role:master`: reads can go to it.
        public let promoted: ContinuousClock.Instant
        /// The new master had a replica online: writes acknowledged by one replica can succeed.
        public let followed: ContinuousClock.Instant
    }

    /// Watches the first replica (the only one a failover promotes) every 10 ms from now until it
    /// is master with a replica online, and returns when each step was first seen. How long these
    /// steps take is the Sentinels' doing (elections, their `INFO` once a second) and varies with a
    /// busy host's scheduling; a test measures the gateway's part of an error window from them.
    public func timeFailover(clock: ContinuousClock, deadline: Duration = .seconds(30)) async throws -> FailoverTimes {
        let client = RedisClient(
            configuration: .init(url: RedisURL(host: "127.0.0.1", port: replica.port), poolSize: 1, clientName: nil),
            logger: Logger(label: "sentinel-test"))
        var promoted: ContinuousClock.Instant?
        var followed: ContinuousClock.Instant?
        do {
            try await AuthGateTestSupport.waitUntil("the first replica is master with a replica online", deadline: deadline, every: .milliseconds(10))
            {
                let text = try await client.send(RedisCommand("INFO", "replication")).string ?? ""
                let seen = clock.now
                if promoted == nil, text.contains("role:master") { promoted = seen }
                guard promoted != nil, (Self.infoInteger(text, "connected_slaves") ?? 0) >= 1, text.contains("state=online") else { return false }
                followed = seen
                return true
            }
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        guard let promoted, let followed else { throw TestSupportError("the failover's times were not recorded") }
        return FailoverTimes(promoted: promoted, followed: followed)
    }

    public static func info(_ port: Int, _ section: String) async throws -> String {
        try await command(port, RedisCommand("INFO", .string(section))).string ?? ""
    }

    /// The integer field `key` of an ``info(_:_:)`` text (its `key:value` lines); nil when it has
    /// none.
    public static func infoInteger(_ text: String, _ key: String) -> Int? {
        text.split(separator: "\r\n").first { $0.hasPrefix(key + ":") }.flatMap { Int($0.dropFirst(key.count + 1)) }
    }
}
