public import Logging
import RedisBridge
public import ServiceLifecycle

/// Writes the store's waiting audit events every `interval` and once more at graceful shutdown
/// (a `Service` of `authgate serve`).
public struct AuditFlusher: Service {
    private let store: any AuthStore
    private let logger: Logger
    private let interval: Duration
    /// Flushes come five times a second: while the store is down, one line per 10 s says so.
    private let outageLog = RepeatedLogThrottle(interval: .seconds(10))

    public init(store: any AuthStore, logger: Logger, interval: Duration = .milliseconds(200)) {
        self.store = store
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                await flush()
            }
        }
        await flush()
    }

    func flush() async {
        do {
            try await store.flushAudit()
        } catch {
            if let repeated = outageLog.admit("flush") {
                logger.warning(
                    "audit events not written yet; kept for the next try", metadata: ["gw.error": "\(error)", "gw.repeated": "\(repeated)"])
            }
        }
    }
}
