import NIOCore
import RedisBridge

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension RedisAuthStore {
    public func createSession(_ session: SessionRecord, refreshTokenHash: String) async throws {
        _ = try await runAcknowledged(
            RedisAccountScripts.createSession,
            keys: [keys.session(session.userID, session.id), keys.sessions(session.userID), keys.sessionOwner(session.id)],
            arguments: [
                .string(keyPrefix), .string(session.userID), .string(session.id), .byteArray(StoredRecordCoding.encode(session)),
                .string(refreshTokenHash), .integer(Self.milliseconds(session.createdAt))
            ]
        )
    }

    public func owner(ofSession sessionID: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.sessionOwner(sessionID)))).string
    }

    public func session(userID: String, sessionID: String) async throws -> SessionRecord? {
        let reply = try await run(RedisCommand("HMGET", .string(keys.session(userID, sessionID)), "record", "refreshed_ms"))
        guard let fields = reply.array, fields.count == 2 else { return nil }
        return try session(record: fields[0], refreshed: fields[1], sessionID: sessionID)
    }

    /// The session `sessionID` from its hash's `record` and `refreshed_ms` fields (nil when there
    /// is no record).
    func session(record: RESPValue, refreshed: RESPValue, sessionID: String) throws -> SessionRecord? {
        guard case .bulkString(let buffer) = record else { return nil }
        var session = try decodedSessions.record(sessionID, buffer, decode: { try StoredRecordCoding.decodeSession($0) })
        if let refreshed = refreshed.int { session.refreshedAt = Date(timeIntervalSince1970: Double(refreshed) / 1000) }
        return session
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
        guard !sessionIDs.isEmpty else { return [] }
        let reply = try await runAcknowledged(
            RedisAccountScripts.deleteSessions, keys: [keys.sessions(userID)],
            arguments: [.string(keyPrefix), .string(userID)] + sessionIDs.map { .string($0) }
        )
        return reply.array?.compactMap(\.string) ?? []
    }

    public func rotateRefreshToken(_ rotation: RefreshRotation) async throws -> (outcome: RefreshRotationOutcome, account: AccountSnapshot?) {
        let reply = try await runAcknowledged(
            RedisAccountScripts.rotation,
            keys: [keys.session(rotation.userID, rotation.sessionID), keys.sessions(rotation.userID), keys.user(rotation.userID)],
            arguments: [
                .string(keyPrefix), .string(rotation.userID), .string(rotation.sessionID), .string(rotation.presentedHash),
                .string(rotation.childHash), .string(rotation.sealedChild), .integer(Self.milliseconds(rotation.now)),
                .integer(Self.milliseconds(rotation.reuseInterval)), .integer(Self.milliseconds(rotation.sessionTimebox)),
                .integer(Self.milliseconds(rotation.inactivityTimeout))
            ]
        )
        let fields = reply.array ?? []
        switch fields.first?.string {
        case "rotated" where fields.count == 2:
            return (.rotated, try account(from: fields[1], userID: rotation.userID, sessionID: rotation.sessionID))
        case "reused" where fields.count == 3:
            return (
                .reusedWithinInterval(sealedCurrent: fields[1].string ?? ""),
                try account(from: fields[2], userID: rotation.userID, sessionID: rotation.sessionID)
            )
        case "reuse_detected": return (.reuseDetected, nil)
        case "expired_timebox": return (.expiredTimebox, nil)
        case "expired_inactivity": return (.expiredInactivity, nil)
        case "not_found": return (.notFound, nil)
        case "banned": return (.userBanned, nil)
        default: throw AuthGateError(.storeCorrupt, "the rotation script answered \(reply)")
        }
    }

    public func appendRevocation(_ event: RevocationEvent) async throws {
        var fields: [(String, RedisArgument)] = [
            ("kind", .string(event.kind.rawValue)), ("user", .string(event.userID)), ("reason", .string(event.reason)),
            ("at", .integer(Self.milliseconds(event.at)))
        ]
        if let sessionID = event.sessionID { fields.append(("session", .string(sessionID))) }
        // Trimmed by age, never by count: an entry leaves only once no token it voids can still
        // be presented, so a replica that starts (or reconnects) reads every revocation that
        // matters, however many came after it (a count cap let a flood of sign-outs push a ban
        // out of the stream, and a new replica let the banned session's token through).
        let keepFrom = Self.milliseconds(Date()) - Self.milliseconds(revocationStreamKeep)
        _ = try await mappingRedisErrors {
            try await redis.appendToStream(keys.revocations, fields: fields, droppingBefore: max(0, keepFrom))
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { date.unixMilliseconds }
    static func milliseconds(_ duration: Duration) -> Int64 { duration.nanoseconds / 1_000_000 }
}
