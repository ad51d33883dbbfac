public import RedisBridge
import Tracing

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The Redis store, shared by every replica. Keys follow the cluster-safe model in
/// ARCHITECTURE.md: everything one atomic operation touches for a user sits under `{u:<id>}`.
public struct RedisAuthStore: AuthStore {
    public let kind = "redis"
    /// The client every store call goes through.
    public let redis: RedisClient
    /// Prefix of every key (`ag:`).
    public let keyPrefix: String
    /// When set, account writes succeed only once that many replicas have them
    /// (``runAcknowledged(_:keys:arguments:)``).
    public let replicaAcknowledgement: RedisReplicaAcknowledgement?
    /// How long an entry stays on the revocation stream: the replicas' revocation retention
    /// (``RevocationView/retention(accessTokenTTL:)``) plus ``revocationStreamMargin``.
    public let revocationStreamKeep: Duration
    /// What the revocation stream keeps beyond the retention: the entries' ids are the Redis
    /// server's clock, the replicas' start and each writer's bound their own.
    public static let revocationStreamMargin = Duration.seconds(600)

    let keys: RedisKeyspace
    /// Audit events recorded and not written yet (``flushAudit()``).
    public let auditBuffer = AuditBuffer()
    /// Users (by id), identities (by user and place in the reply) and sessions (by id) already
    /// decoded, each with the bytes it was decoded from.
    let decodedUsers: StoredRecordCache<String, UserRecord>
    let decodedIdentities: StoredRecordCache<IdentitySlot, IdentityRecord>
    let decodedSessions: StoredRecordCache<String, SessionRecord>

    /// Where an identity record came in a user's `HVALS` reply: its key in ``decodedIdentities``
    /// (the bytes kept with it decide whether it is the same record).
    struct IdentitySlot: Hashable, Sendable {
        let userID: String
        let position: Int
    }

    /// `recordCacheSize`: how many decoded records of each kind are kept (`store.redis.record_cache_size`; 0 keeps none).
    /// `revocationRetention`: how long the replicas keep a revocation (the access tokens' lifetime
    /// and a margin, ``RevocationView/retention(accessTokenTTL:)``).
    public init(
        redis: RedisClient, keyPrefix: String, replicaAcknowledgement: RedisReplicaAcknowledgement? = nil,
        recordCacheSize: Int = StoreConfiguration.Redis.defaultRecordCacheSize,
        revocationRetention: Duration = RevocationView.retention(accessTokenTTL: TokensConfiguration.defaultAccessTokenTTL)
    ) {
        self.redis = redis
        self.keyPrefix = keyPrefix
        self.replicaAcknowledgement = replicaAcknowledgement
        self.revocationStreamKeep = revocationRetention + Self.revocationStreamMargin
        self.keys = RedisKeyspace(prefix: keyPrefix)
        self.decodedUsers = StoredRecordCache(capacity: recordCacheSize)
        self.decodedIdentities = StoredRecordCache(capacity: recordCacheSize)
        self.decodedSessions = StoredRecordCache(capacity: recordCacheSize)
    }

    /// Sends a command, turning Redis failures into ``AuthGateError/Code/storeUnavailable``.
    @discardableResult
    func run(_ command: RedisCommand) async throws -> RESPValue {
        try await GatewaySpans.run("redis \(command.name)", ofKind: .client) { span in
            span?.attributes["db.system"] = "redis"
            return try await mappingRedisErrors { try await redis.send(command) }
        }
    }

    /// Runs a script, turning Redis failures into ``AuthGateError/Code/storeUnavailable``; with
    /// `acknowledgement`, only once that many replicas have its writes.
    func run(
        _ script: RedisScript, keys: [String], arguments: [RedisArgument], acknowledgement: RedisReplicaAcknowledgement? = nil
    ) async throws -> RESPValue {
        try await GatewaySpans.run("redis EVALSHA", ofKind: .client) { span in
            span?.attributes["db.system"] = "redis"
            return try await mappingRedisErrors {
                try await redis.evaluate(script, keys: keys, arguments: arguments, acknowledgement: acknowledgement)
            }
        }
    }

    /// Runs a script that changes an account (a session created, rotated or ended, a user created,
    /// changed or deleted, an identity linked or removed): with ``replicaAcknowledgement`` set,
    /// `WAIT` follows it in the same round trip, and too few replicas in time is
    /// ``AuthGateError/Code/storeUnavailable`` (503): the change was made on the master, whole, and
    /// the client's retry is safe (a refresh retried within the reuse interval gets the same child).
    func runAcknowledged(_ script: RedisScript, keys: [String], arguments: [RedisArgument]) async throws -> RESPValue {
        try await run(script, keys: keys, arguments: arguments, acknowledgement: replicaAcknowledgement)
    }

    func mappingRedisErrors<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch let error as RedisError {
            throw AuthGateError(.storeUnavailable, error.description)
        }
    }

    public func checkReadiness() async throws {
        do {
            guard try await redis.ping() else { throw AuthGateError(.storeUnavailable, "Redis did not answer PONG") }
        } catch let error as RedisError {
            throw AuthGateError(.storeUnavailable, error.description)
        }
    }

    /// Asks Redis (`INFO memory`) whether it may evict keys. A refusal of `INFO` (an ACL without
    /// it, a proxy that does not pass it on) is ``KeyEviction/unknown(_:)``, not a failure.
    public func keyEviction() async throws -> KeyEviction {
        let reply: RESPValue
        do {
            reply = try await redis.send(RedisCommand("INFO", "memory"))
        } catch let error as RedisError where error.code == .serverError {
            return .unknown("Redis refused INFO: \(error.message.prefix(120))")
        } catch let error as RedisError {
            throw AuthGateError(.storeUnavailable, error.description)
        }
        guard let text = reply.string else { return .unknown("INFO memory gave no text") }
        return KeyEviction.fromRedisMemoryInfo(text)
    }

    public func insertIfAbsent(_ key: String, expiresAt: Date) async throws -> Bool {
        try await insertIfAbsent(key, value: "1", expiresAt: expiresAt)
    }

    public func contains(_ key: String) async throws -> Bool {
        try await run(RedisCommand("EXISTS", .string(keys.expiring(key)))).int == 1
    }

    public func consume(_ key: String) async throws -> Bool {
        try await take(key) != nil
    }

    public func insertIfAbsent(_ key: String, value: String, expiresAt: Date) async throws -> Bool {
        let milliseconds = expiresAt.unixMilliseconds(rounded: .up)
        let reply = try await run(RedisCommand("SET", .string(keys.expiring(key)), .string(value), "PXAT", .integer(milliseconds), "NX"))
        return !reply.isNull
    }

    public func value(of key: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.expiring(key)))).string
    }

    public func take(_ key: String) async throws -> String? {
        try await run(RedisCommand("GETDEL", .string(keys.expiring(key)))).string
    }

    /// ``SlidingWindow/admits(current:previous:)`` in Lua (the same sum in parts per million),
    /// then `INCR` and, on the first, `PEXPIREAT` of the current window's counter, only when
    /// admitted: `{admitted (1 or 0), current, previous}`. ARGV: the limit, the previous window's
    /// weight in parts per million, the current counter's expiry (ms).
    static let countRequestScript = RedisScript(
        """
        local previous = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
        local current = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
        if previous * tonumber(ARGV[2]) + (current + 1) * 1000000 > tonumber(ARGV[1]) * 1000000 then
          return {0, current, previous}
        end
        current = redis.call('INCR', KEYS[1])
        if current == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
        return {1, current, previous}
        """
    )

    public func countRequest(in window: SlidingWindow, currentKey: String, previousKey: String) async throws -> SlidingWindow.Counts {
        let reply = try await run(
            Self.countRequestScript, keys: [keys.expiring(currentKey), keys.expiring(previousKey)],
            arguments: [
                .integer(Int64(window.limit)), .integer(window.previousWeight), .integer(window.currentExpiresAt.unixMilliseconds(rounded: .up))
            ]
        )
        guard let parts = reply.array, parts.count == 3, let admitted = parts[0].int, let current = parts[1].int, let previous = parts[2].int else {
            throw AuthGateError(.storeCorrupt, "the rate-limit script answered \(reply)")
        }
        return SlidingWindow.Counts(isAdmitted: admitted == 1, current: Int(clamping: current), previous: Int(clamping: previous))
    }
}
