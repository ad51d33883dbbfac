#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The in-process store: everything lives in this process and is lost when it stops.
///
/// For development (`make run`) and tests. It cannot be shared by replicas, so production
/// configurations use ``RedisAuthStore``.
public actor MemoryAuthStore: AuthStore {
    public nonisolated let kind = "memory"
    private var expiringKeys: [String: Date] = [:]
    private var insertsSinceSweep = 0

    public init() {}

    public nonisolated func checkReadiness() async throws {}

    public func insertIfAbsent(_ key: String, expiresAt: Date) async throws -> Bool {
        let now = Date()
        sweepIfDue(now: now)
        if let existing = expiringKeys[key], existing > now { return false }
        expiringKeys[key] = expiresAt
        return true
    }

    public func consume(_ key: String) async throws -> Bool {
        guard let expiry = expiringKeys.removeValue(forKey: key) else { return false }
        return expiry > Date()
    }

    /// Drops expired keys every 1,024 inserts so memory stays bounded by the live windows.
    private func sweepIfDue(now: Date) {
        insertsSinceSweep += 1
        guard insertsSinceSweep >= 1024 else { return }
        insertsSinceSweep = 0
        expiringKeys = expiringKeys.filter { $0.value > now }
    }
}
