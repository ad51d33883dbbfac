import NIOCore
import RedisBridge

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The revocation outbox on Redis: a sorted set of entry ids scored by when each is due (a claim
/// re-scores an entry to the end of its lease) and a hash of the entries. Claims and settlements
/// are scripts, so each entry is leased to one replica at a time and a settlement made after the
/// lease was lost changes nothing.
extension RedisAuthStore {
    /// KEYS: due, entries. ARGV: (id, record, due ms) for each entry; a due of `failed` keeps
    /// the entry for operators only (never claimed).
    static let enqueueProviderRevocationsScript = RedisScript(
        """
        for i = 1, #ARGV, 3 do
          redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
          if ARGV[i + 2] == 'failed' then
            redis.call('ZREM', KEYS[1], ARGV[i])
          else
            redis.call('ZADD', KEYS[1], ARGV[i + 2], ARGV[i])
          end
        end
        return #ARGV / 3
        """
    )

    /// KEYS: due, entries. ARGV: now ms, lease end ms, limit. Returns the leased entries.
    static let claimProviderRevocationsScript = RedisScript(
        """
        local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
        local out = {}
        for _, id in ipairs(ids) do
          local entry = redis.call('HGET', KEYS[2], id)
          if entry then
            redis.call('ZADD', KEYS[1], ARGV[2], id)
            out[#out + 1] = entry
          else
            redis.call('ZREM', KEYS[1], id)
          end
        end
        return out
        """
    )

    /// KEYS: due, entries. ARGV: id, lease end ms, finished|retry|failed, record, due ms.
    /// Returns 1, or 0 when the lease is no longer the caller's.
    static let settleProviderRevocationScript = RedisScript(
        """
        local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
        if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
        if ARGV[3] == 'finished' then
          redis.call('ZREM', KEYS[1], ARGV[1])
          redis.call('HDEL', KEYS[2], ARGV[1])
        elseif ARGV[3] == 'retry' then
          redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
          redis.call('ZADD', KEYS[1], ARGV[5], ARGV[1])
        else
          redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
          redis.call('ZREM', KEYS[1], ARGV[1])
        end
        return 1
        """
    )

    public func enqueueProviderRevocations(_ entries: [ProviderRevocation]) async throws {
        guard !entries.isEmpty else { return }
        var arguments: [RedisArgument] = []
        for entry in entries {
            let due: RedisArgument = entry.failedAt == nil ? .integer(entry.nextAttemptAt.unixMilliseconds) : .string("failed")
            arguments += [.string(entry.id), .byteArray(entry.encoded()), due]
        }
        _ = try await run(
            Self.enqueueProviderRevocationsScript, keys: [keys.providerRevocationsDue, keys.providerRevocationEntries], arguments: arguments)
    }

    public func claimProviderRevocations(now: Date, lease: Duration, limit: Int) async throws -> [ProviderRevocation] {
        let nowMilliseconds = now.unixMilliseconds
        let leaseEnd = nowMilliseconds + max(1, Self.milliseconds(lease))
        let reply = try await run(
            Self.claimProviderRevocationsScript, keys: [keys.providerRevocationsDue, keys.providerRevocationEntries],
            arguments: [.integer(nowMilliseconds), .integer(leaseEnd), .integer(Int64(max(1, limit)))])
        let leasedUntil = Date(timeIntervalSince1970: Double(leaseEnd) / 1000)
        return try (reply.array ?? []).map { value in
            guard case .bulkString(let buffer) = value else { throw AuthGateError(.storeCorrupt, "a provider revocation is not a string") }
            var entry = try ProviderRevocation.decode(buffer.readableBytesView)
            entry.lease = leasedUntil
            return entry
        }
    }

    public func settleProviderRevocation(_ entry: ProviderRevocation, as settlement: ProviderRevocation.Settlement) async throws -> Bool {
        guard let lease = entry.lease else { return false }
        let mode: String
        switch settlement {
        case .finished: mode = "finished"
        case .retry: mode = "retry"
        case .failed: mode = "failed"
        }
        let reply = try await run(
            Self.settleProviderRevocationScript, keys: [keys.providerRevocationsDue, keys.providerRevocationEntries],
            arguments: [
                .string(entry.id), .integer(lease.unixMilliseconds), .string(mode), .byteArray(entry.encoded()),
                .integer(entry.nextAttemptAt.unixMilliseconds)
            ])
        return reply.int == 1
    }

    public func providerRevocations() async throws -> [ProviderRevocation] {
        let reply = try await run(RedisCommand("HVALS", .string(keys.providerRevocationEntries)))
        return try (reply.array ?? []).compactMap { value -> ProviderRevocation? in
            guard case .bulkString(let buffer) = value else { return nil }
            return try ProviderRevocation.decode(buffer.readableBytesView)
        }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }
}
