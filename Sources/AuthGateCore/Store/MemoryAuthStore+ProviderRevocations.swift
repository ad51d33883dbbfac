#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The revocation outbox in memory, with the Redis store's rules (claims lease, a lost lease
/// settles nothing).
extension MemoryAuthStore {
    public func enqueueProviderRevocations(_ entries: [ProviderRevocation]) async throws {
        for var entry in entries {
            entry.lease = nil
            providerRevocationEntries[entry.id] = entry
        }
    }

    public func claimProviderRevocations(now: Date, lease: Duration, limit: Int) async throws -> [ProviderRevocation] {
        let until = Date(timeIntervalSince1970: Double(now.addingTimeInterval(lease.inSeconds).unixMilliseconds) / 1000)
        let due = providerRevocationEntries.values
            .filter { $0.failedAt == nil && ($0.lease ?? $0.nextAttemptAt) <= now }
            .sorted { ($0.lease ?? $0.nextAttemptAt, $0.id) < ($1.lease ?? $1.nextAttemptAt, $1.id) }
            .prefix(max(0, limit))
        return due.map { entry in
            var claimed = entry
            claimed.lease = until
            providerRevocationEntries[entry.id] = claimed
            return claimed
        }
    }

    public func settleProviderRevocation(_ entry: ProviderRevocation, as settlement: ProviderRevocation.Settlement) async throws -> Bool {
        guard let stored = providerRevocationEntries[entry.id], stored.failedAt == nil, stored.lease != nil, stored.lease == entry.lease else {
            return false
        }
        switch settlement {
        case .finished:
            providerRevocationEntries.removeValue(forKey: entry.id)
        case .retry, .failed:
            var kept = entry
            kept.lease = nil
            providerRevocationEntries[entry.id] = kept
        }
        return true
    }

    public func providerRevocations() async throws -> [ProviderRevocation] {
        providerRevocationEntries.values.map { entry in
            var listed = entry
            listed.lease = nil
            return listed
        }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }
}
