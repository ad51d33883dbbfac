public import Logging
public import ServiceLifecycle

/// Writes the store's waiting audit events every `interval` and once more at graceful shutdown
/// (a `Service` of `authgate serve`).
public struct AuditFlusher: Service {
    private let store: any AuthStore
    private let logger: Logger
    private let interval: Duration

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

    private func flush() async {
        do {
            try await store.flushAudit()
        } catch {
            logger.warning("audit events not written yet; kept for the next try", metadata: ["gw.error": "\(error)"])
        }
    }
}
