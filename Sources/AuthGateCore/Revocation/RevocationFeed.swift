public import Logging
import NIOCore
public import RedisBridge
public import ServiceLifecycle

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Tails the revocation stream into a ``RevocationView``: from one retention period back (so a
/// replica that starts late still knows every revocation a live token could be affected by), then
/// live, resuming from its last entry after a reconnect. A `Service`.
public struct RevocationFeed: Service {
    private let reader: RedisStreamReader
    private let view: RevocationView

    /// - Parameter master: behind Sentinels, the master the store's client follows
    ///   (``RedisClient/announcedMaster``): the feed reads from it, and moves with a failover.
    public init(
        configuration: RedisClientConfiguration, keyPrefix: String, view: RevocationView, logger: Logger,
        master: (@Sendable () -> RedisServerAddress?)? = nil
    ) {
        let start = Int64((Date().timeIntervalSince1970 - view.retention.inSeconds) * 1000)
        self.view = view
        self.reader = RedisStreamReader(
            configuration: configuration,
            stream: RedisKeyspace(prefix: keyPrefix).revocations,
            start: .after("\(max(0, start))-0"),
            blockTimeout: .milliseconds(250),
            logger: logger,
            master: master
        ) { [view] entries in
            for entry in entries {
                if let event = Self.event(from: entry) { view.apply(event) }
            }
            view.markCurrent(at: Date())
        }
    }

    public func run() async throws {
        // Heartbeat: every read that returns (entries or the block timeout) proves the view is current.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await reader.run() }
            group.addTask {
                let started = NIODeadline.now()
                await cancelWhenGracefulShutdown {
                    while !Task.isCancelled {
                        if let contact = reader.lastContact {
                            let age = NIODeadline.now() - contact
                            view.markCurrent(at: Date().addingTimeInterval(-Double(age.nanoseconds) / 1e9))
                            GatewayMetrics.revocationFeedLag(seconds: Double(age.nanoseconds) / 1e9)
                        } else {
                            // Not heard from Redis yet: the view is as old as the feed.
                            GatewayMetrics.revocationFeedLag(seconds: Double((NIODeadline.now() - started).nanoseconds) / 1e9)
                        }
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Reads one stream entry written by ``RedisAuthStore/appendRevocation(_:)``.
    static func event(from entry: RedisStreamEntry) -> RevocationEvent? {
        guard let kindText = entry["kind"], let kind = RevocationEvent.Kind(rawValue: kindText), let user = entry["user"],
            let atText = entry["at"], let at = DecimalInteger.parse(atText, in: Date.unixMillisecondsRange)
        else { return nil }
        return RevocationEvent(
            kind: kind, userID: user, sessionID: entry["session"], reason: entry["reason"] ?? "", at: Date(timeIntervalSince1970: Double(at) / 1000))
    }
}
