import Synchronization

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The in-process store: everything lives in this process and is lost when it stops.
///
/// For development (`make run`) and tests. It cannot be shared by replicas, so production
/// configurations use ``RedisAuthStore``. It follows the same rules as the Redis store (one
/// conformance suite runs against both).
public actor MemoryAuthStore: AuthStore {
    public nonisolated let kind = "memory"

    struct StoredSession {
        var record: SessionRecord
        var current: String
        var parent: String?
        var parentRotatedAt: Date?
        var sealedCurrent: String?
        var ancestors: [String] = []
    }

    /// Keys recorded until a time, each with its value (`"1"` when none was given, as on Redis):
    /// replay records, issued nonces, browser flows.
    var expiringKeys: [String: (value: String, expiresAt: Date)] = [:]
    private var counters: [String: (value: Int, expiresAt: Date)] = [:]
    private var insertsSinceSweep = 0
    var users: [String: UserRecord] = [:]
    /// The version each user record was last written at (its ``RecordStamp``), from one counter.
    var userVersions: [String: UInt64] = [:]
    var nextUserVersion: UInt64 = 0
    /// Operators' fences on accounts (token, expiry).
    var fences: [String: (token: String, expiresAt: Date)] = [:]
    var identitiesByUser: [String: [IdentityRecord]] = [:]
    var identityOwners: [IdentityKey: String] = [:]
    var emailOwners: [ByteExactString: String] = [:]
    var sessionsByUser: [String: [String: StoredSession]] = [:]
    /// The provider token revocation outbox, by entry id.
    var providerRevocationEntries: [String: ProviderRevocation] = [:]
    /// The revocation stream; the memory store's revocation view reads it in process.
    public private(set) var revocations: [RevocationEvent] = []
    private nonisolated let listeners = Mutex<[@Sendable (RevocationEvent) -> Void]>([])
    /// The audit trail (newest 100,000 events).
    nonisolated let auditTrail = Mutex(MemoryAuditTrail())

    public init() {}

    public nonisolated func checkReadiness() async throws {}

    /// Records leave this store only when they expire or are removed.
    public nonisolated func keyEviction() async throws -> KeyEviction { .never }

    public func insertIfAbsent(_ key: String, expiresAt: Date) async throws -> Bool {
        recordIfAbsent(key, expiresAt: expiresAt)
    }

    /// ``insertIfAbsent(_:expiresAt:)`` within the caller's actor turn.
    func recordIfAbsent(_ key: String, value: String = "1", expiresAt: Date) -> Bool {
        let now = Date()
        sweepIfDue(now: now)
        if let existing = expiringKeys[key], existing.expiresAt > now { return false }
        expiringKeys[key] = (value, expiresAt)
        return true
    }

    public func contains(_ key: String) async throws -> Bool {
        try await value(of: key) != nil
    }

    public func consume(_ key: String) async throws -> Bool {
        takeExpiring(key) != nil
    }

    /// ``take(_:)`` within the caller's actor turn.
    func takeExpiring(_ key: String) -> String? {
        expiringKeys.removeValue(forKey: key).flatMap { $0.expiresAt > Date() ? $0.value : nil }
    }

    public func insertIfAbsent(_ key: String, value: String, expiresAt: Date) async throws -> Bool {
        recordIfAbsent(key, value: value, expiresAt: expiresAt)
    }

    public func value(of key: String) async throws -> String? {
        expiringKeys[key].flatMap { $0.expiresAt > Date() ? $0.value : nil }
    }

    public func take(_ key: String) async throws -> String? {
        takeExpiring(key)
    }

    public func countRequest(in window: SlidingWindow, currentKey: String, previousKey: String) async throws -> SlidingWindow.Counts {
        let now = Date()
        func count(_ key: String) -> Int { counters[key].flatMap { $0.expiresAt > now ? $0.value : nil } ?? 0 }
        let (current, previous) = (count(currentKey), count(previousKey))
        guard window.admits(current: current, previous: previous) else {
            return SlidingWindow.Counts(isAdmitted: false, current: current, previous: previous)
        }
        if counters.count > 100_000 { counters = counters.filter { $0.value.expiresAt > now } }
        let expiresAt = counters[currentKey].flatMap { $0.expiresAt > now ? $0.expiresAt : nil } ?? window.currentExpiresAt
        counters[currentKey] = (current + 1, expiresAt)
        return SlidingWindow.Counts(isAdmitted: true, current: current + 1, previous: previous)
    }

    public func appendRevocation(_ event: RevocationEvent) async throws {
        revocations.append(event)
        for listener in listeners.withLock({ $0 }) { listener(event) }
    }

    /// Calls `listener` with every revocation appended from now on: how the revocation view is
    /// fed in process when there is no Redis stream.
    public nonisolated func onRevocation(_ listener: @escaping @Sendable (RevocationEvent) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    /// Drops expired keys every 1,024 inserts so memory stays bounded by the live windows.
    private func sweepIfDue(now: Date) {
        insertsSinceSweep += 1
        guard insertsSinceSweep >= 1024 else { return }
        insertsSinceSweep = 0
        expiringKeys = expiringKeys.filter { $0.value.expiresAt > now }
    }
}
