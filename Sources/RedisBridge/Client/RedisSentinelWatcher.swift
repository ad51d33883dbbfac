import Logging
import NIOCore

/// Listens to every Sentinel for `+promoted-slave` and `+switch-master` (``RedisMasterSwitch``)
/// and reports each announcement for the client's master, so that the client reconnects the
/// moment the new master takes writes instead of when its backoff ends.
///
/// Every Sentinel is watched, not one: only the Sentinel that leads a failover announces the
/// promotion, the others hear of it up to two seconds later. A watch that loses its
/// Sentinel (or is refused by it) logs a warning once and reconnects with the client's backoff;
/// ``run()`` returns when its task is cancelled.
struct RedisSentinelWatcher: Sendable {
    let sentinel: RedisSentinelConfiguration
    let configuration: RedisClientConfiguration
    let eventLoop: any EventLoop
    let logger: Logger
    /// Called for each announcement about ``RedisSentinelConfiguration/masterName`` (once per
    /// Sentinel that makes it).
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
}
