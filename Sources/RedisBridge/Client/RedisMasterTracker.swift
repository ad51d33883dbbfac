import Logging
import Synchronization

/// The master address the client last heard from a Sentinel: from an announcement
/// (``RedisMasterSwitch``) or from the answer that led to a working connection. New connections
/// try it first (``RedisSentinelLocator``). A change of the confirmed master is logged once
/// (`redis master switched`, naming both addresses) and counted.
final class RedisMasterTracker: Sendable {
    private struct Known {
        /// Where to connect first.
        var current: RedisServerAddress?
        /// The last master confirmed (connected to, or announced as promoted): what logs report.
        var confirmed: RedisServerAddress?
    }

    private let known = Mutex(Known())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// The address to try first, if any.
    var current: RedisServerAddress? { known.withLock { $0.current } }

    /// Records an announcement or a connection to a master.
    func update(_ master: RedisServerAddress, confirmed: Bool = true, masterName: String) {
        let change: (previous: RedisServerAddress?, current: RedisServerAddress)? = known.withLock { known in
            known.current = master
            guard confirmed, known.confirmed != master else { return nil }
            defer { known.confirmed = master }
            return (known.confirmed, master)
        }
        guard let change else { return }
        guard let previous = change.previous else {
            logger.info("redis master found", metadata: ["gw.redis.master": "\(change.current)", "gw.redis.master_name": "\(masterName)"])
            return
        }
        RedisMetrics.masterSwitched()
        logger.notice(
            "redis master switched",
            metadata: ["gw.redis.master": "\(change.current)", "gw.redis.previous": "\(previous)", "gw.redis.master_name": "\(masterName)"])
    }
}
