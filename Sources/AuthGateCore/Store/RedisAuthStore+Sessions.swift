import NIOCore
import RedisBridge

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

extension RedisAuthStore {
    /// Rotation and reuse detection in one script on the user's slot. KEYS: the session hash and
    /// the user's session index. ARGV: presented hash, child hash, sealed child, now (ms), reuse
    /// interval (ms), timebox (ms, 0 = none), inactivity (ms, 0 = none), session id.
    static let rotationScript = RedisScript(
        """
        local s = KEYS[1]
        if redis.call('EXISTS', s) == 0 then return {'not_found'} end
        local f = redis.call('HMGET', s, 'current', 'parent', 'parent_at', 'sealed', 'ancestors', 'created_ms', 'refreshed_ms')
        local current, parent, ancestors = f[1], f[2] or '', f[5] or ''
        local parentAt, created, refreshed = tonumber(f[3] or '0'), tonumber(f[6] or '0'), tonumber(f[7] or '0')
        local now, reuse, timebox, inactivity = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
        local function revoke()
          redis.call('DEL', s)
          redis.call('ZREM', KEYS[2], ARGV[8])
        end
        if timebox > 0 and now > created + timebox then revoke() return {'expired_timebox'} end
        if inactivity > 0 and now > refreshed + inactivity then revoke() return {'expired_inactivity'} end
        if ARGV[1] == current then
          local list = ancestors
          if parent ~= '' then list = parent .. ' ' .. ancestors end
          local kept, count = {}, 0
          for hash in string.gmatch(list, '%S+') do
            if count < 32 then kept[#kept + 1] = hash count = count + 1 end
          end
          redis.call('HSET', s, 'parent', current, 'current', ARGV[2], 'parent_at', now, 'sealed', ARGV[3],
            'ancestors', table.concat(kept, ' '), 'refreshed_ms', now)
          return {'rotated'}
        end
        if parent ~= '' and ARGV[1] == parent then
          if now - parentAt <= reuse then return {'reused', f[4] or ''} end
          revoke()
          return {'reuse_detected'}
        end
        if string.find(' ' .. ancestors .. ' ', ' ' .. ARGV[1] .. ' ', 1, true) then
          revoke()
          return {'reuse_detected'}
        end
        return {'not_found'}
        """
    )

    public func createSession(_ session: SessionRecord, refreshTokenHash: String) async throws {
        let created = Self.milliseconds(session.createdAt)
        try await run(
            RedisCommand(
                "HSET", .string(keys.session(session.userID, session.id)), "record", .string(try Self.encode(session)),
                "current", .string(refreshTokenHash), "created_ms", .integer(created), "refreshed_ms", .integer(created)
            )
        )
        try await run(RedisCommand("ZADD", .string(keys.sessions(session.userID)), .integer(created), .string(session.id)))
        try await run(RedisCommand("SET", .string(keys.sessionOwner(session.id)), .string(session.userID)))
    }

    public func owner(ofSession sessionID: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.sessionOwner(sessionID)))).string
    }

    public func session(userID: String, sessionID: String) async throws -> SessionRecord? {
        let reply = try await run(RedisCommand("HMGET", .string(keys.session(userID, sessionID)), "record", "refreshed_ms"))
        guard let fields = reply.array, fields.count == 2, case .bulkString(let buffer) = fields[0] else { return nil }
        var record = try Self.decode(SessionRecord.self, Array(buffer.readableBytesView))
        if let refreshed = fields[1].int { record.refreshedAt = Date(timeIntervalSince1970: Double(refreshed) / 1000) }
        return record
    }

    public func sessions(ofUser userID: String) async throws -> [SessionRecord] {
        let ids = try await run(RedisCommand("ZRANGE", .string(keys.sessions(userID)), 0, -1)).array?.compactMap(\.string) ?? []
        var sessions: [SessionRecord] = []
        for id in ids {
            if let session = try await session(userID: userID, sessionID: id) {
                sessions.append(session)
            } else {
                try await run(RedisCommand("ZREM", .string(keys.sessions(userID)), .string(id)))
            }
        }
        return sessions
    }

    public func deleteSessions(userID: String, sessionIDs: [String]) async throws -> [String] {
        var deleted: [String] = []
        for id in sessionIDs {
            let removed = try await run(RedisCommand("DEL", .string(keys.session(userID, id)))).int ?? 0
            try await run(RedisCommand("ZREM", .string(keys.sessions(userID)), .string(id)))
            try await run(RedisCommand("DEL", .string(keys.sessionOwner(id))))
            if removed > 0 { deleted.append(id) }
        }
        return deleted
    }

    public func rotateRefreshToken(_ rotation: RefreshRotation) async throws -> RefreshRotationOutcome {
        let reply = try await run(
            Self.rotationScript,
            keys: [keys.session(rotation.userID, rotation.sessionID), keys.sessions(rotation.userID)],
            arguments: [
                .string(rotation.presentedHash), .string(rotation.childHash), .string(rotation.sealedChild),
                .integer(Self.milliseconds(rotation.now)), .integer(Self.milliseconds(rotation.reuseInterval)),
                .integer(Self.milliseconds(rotation.sessionTimebox)), .integer(Self.milliseconds(rotation.inactivityTimeout)),
                .string(rotation.sessionID)
            ]
        )
        let fields = reply.array ?? []
        switch fields.first?.string {
        case "rotated": return .rotated
        case "reused": return .reusedWithinInterval(sealedCurrent: fields.count > 1 ? fields[1].string ?? "" : "")
        case "reuse_detected": return .reuseDetected
        case "expired_timebox": return .expiredTimebox
        case "expired_inactivity": return .expiredInactivity
        case "not_found": return .notFound
        default: throw AuthGateError(.storeCorrupt, "the rotation script answered \(reply)")
        }
    }

    public func appendRevocation(_ event: RevocationEvent) async throws {
        var fields: [(String, RedisArgument)] = [
            ("kind", .string(event.kind.rawValue)), ("user", .string(event.userID)), ("reason", .string(event.reason)),
            ("at", .integer(Self.milliseconds(event.at)))
        ]
        if let sessionID = event.sessionID { fields.append(("session", .string(sessionID))) }
        try await mappingRedisErrors { try await redis.appendToStream(keys.revocations, fields: fields, approximateMaxLength: 100_000) }
    }

    static func milliseconds(_ date: Date) -> Int64 { date.unixMilliseconds }
    static func milliseconds(_ duration: Duration) -> Int64 { duration.nanoseconds / 1_000_000 }
}
