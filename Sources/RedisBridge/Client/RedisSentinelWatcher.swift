import Logging
import NIOCore

/// Listens to every Sentinel for `+promoted-slave` and `+switch-master` (``RedisMasterSwitch``)
/// and reports each announcement for the client's master, so that the client reconnects the
/// moment the new master takes writes instead of when its backoff ends.
///
/// Every Sentinel is watched, not one: only the Sentinel that leads a failover announces the
/// promotion, the others hear of it up to two seconds later.
///
/// An announcement made while no watch was subscribed (before the first subscription, or while
/// one reconnected) is never delivered, and a client whose old master stays up and writable (cut
/// off from the Sentinels, or refusing to be demoted) would have written to it for good. So each
/// time a watch has subscribed, it asks its Sentinel which node is the master; when that is not
/// the one the client follows, it asks every Sentinel, and a majority naming one node counts as
/// an announcement (one Sentinel that has not heard of a failover yet is not enough to send the
/// client back). A watch that loses its
/// Sentinel (or is refused by it) logs a warning once and reconnects with the client's backoff;
/// ``run()`` returns when its task is cancelled.
struct RedisSentinelWatcher: Sendable {
    let sentinel: RedisSentinelConfiguration
    let configuration: RedisClientConfiguration
    let eventLoop: any EventLoop
    let logger: Logger
    /// The master the client follows now (nil before it has found one).
    let following: @Sendable () -> RedisServerAddress?
    /// Called for each announcement about ``RedisSentinelConfiguration/masterName`` (once per
    /// Sentinel that makes it), and for a master named by most Sentinels when a watch catches up.
    let switched: @Sendable (RedisMasterSwitch) -> Void

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            for node in sentinel.nodes { group.addTask { await watch(node) } }
        }
    }

    private func watch(_ node: RedisSentinelConfiguration.Node) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await RedisSentinelLocator.connect(
                    sentinel: node, sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
                let messages: AsyncStream<RESPValue>
                do {
                    messages = try await connection.subscribe(to: RedisMasterSwitch.channels)
                } catch {
                    connection.closeNow()
                    throw error
                }
                failures = 0
                await catchUp(asking: node)
                await withTaskCancellationHandler {
                    for await message in messages {
                        guard let announcement = RedisMasterSwitch(message: message), announcement.masterName == sentinel.masterName else { continue }
                        switched(announcement)
                    }
                } onCancel: {
                    connection.closeNow()
                }
                connection.closeNow()
            } catch {
                guard !Task.isCancelled else { return }
                failures += 1
                // Once per run of failures: a Sentinel that is down, or one that refuses AuthGate's
                // user (a missing channel grant), leaves failovers to be found by reconnecting.
                if failures == 1 {
                    logger.warning(
                        "cannot watch a Redis Sentinel for failovers",
                        metadata: ["gw.redis.sentinel": "\(node)", "gw.redis.error": "\((error as? RedisError)?.message ?? "\(type(of: error))")"])
                }
            }
            guard !Task.isCancelled else { return }
            try? await Task.sleep(nanoseconds: UInt64(max(1, configuration.reconnectBackoff(afterFailures: max(1, failures)).nanoseconds)))
        }
    }

    /// What was announced before this watch subscribed: `node`'s master, and when it is not the
    /// client's, the node most Sentinels name (more than half of them), reported as a switch.
    private func catchUp(asking node: RedisSentinelConfiguration.Node) async {
        guard let followed = following(), let named = await master(namedBy: node), named != followed else { return }
        var votes = 0
        for other in sentinel.nodes where await (other == node ? named : master(namedBy: other)) == named { votes += 1 }
        guard votes * 2 > sentinel.nodes.count, following() == followed else { return }
        logger.notice(
            "redis master named by the Sentinels differs from the one followed: following it",
            metadata: ["gw.redis.master": "\(named)", "gw.redis.previous": "\(followed)", "gw.redis.sentinels": "\(votes)/\(sentinel.nodes.count)"])
        switched(RedisMasterSwitch(masterName: sentinel.masterName, previous: followed, current: named))
    }

    /// The master one Sentinel names; nil when it cannot be asked or does not know.
    private func master(namedBy node: RedisSentinelConfiguration.Node) async -> RedisServerAddress? {
        try? await RedisSentinelLocator.master(
            named: sentinel.masterName, by: node, sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
    }
}
