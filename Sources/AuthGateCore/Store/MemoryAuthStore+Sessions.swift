#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension MemoryAuthStore {
    public func createSession(_ session: SessionRecord, refreshTokenHash: String) async throws {
        sessionsByUser[session.userID, default: [:]][session.id] = StoredSession(record: session, current: refreshTokenHash)
    }

    public func session(userID: String, sessionID: String) async throws -> SessionRecord? {
        sessionsByUser[userID]?[sessionID]?.record
    }

    public func owner(ofSession sessionID: String) async throws -> String? {
        sessionsByUser.first { $0.value[sessionID] != nil }?.key
    }

    public func sessions(ofUser userID: String) async throws -> [SessionRecord] {
        (sessionsByUser[userID] ?? [:]).values.map(\.record).sorted { $0.createdAt < $1.createdAt }
    }

    public func deleteSessions(userID: String, sessionIDs: [String]) async throws -> [String] {
        var deleted: [String] = []
        for id in sessionIDs where sessionsByUser[userID]?.removeValue(forKey: id) != nil { deleted.append(id) }
        return deleted
    }

    /// The same rules as the Redis script (`RedisAuthStore+Sessions.swift`), under the actor.
    public func rotateRefreshToken(_ rotation: RefreshRotation) async throws -> (outcome: RefreshRotationOutcome, account: AccountSnapshot?) {
        let outcome = rotate(rotation)
        switch outcome {
        case .rotated, .reusedWithinInterval: return (outcome, snapshot(rotation.userID, sessionID: rotation.sessionID))
        default: return (outcome, nil)
        }
    }

    private func rotate(_ rotation: RefreshRotation) -> RefreshRotationOutcome {
        guard let user = users[rotation.userID] else { return .notFound }
        guard !user.isBanned(at: rotation.now) else { return .userBanned }
        guard var stored = sessionsByUser[rotation.userID]?[rotation.sessionID] else { return .notFound }
        let now = rotation.now
        func revoke() { sessionsByUser[rotation.userID]?.removeValue(forKey: rotation.sessionID) }
        if rotation.sessionTimebox > .zero, now.timeIntervalSince(stored.record.createdAt) > rotation.sessionTimebox.inSeconds {
            revoke()
            return .expiredTimebox
        }
        if rotation.inactivityTimeout > .zero, now.timeIntervalSince(stored.record.refreshedAt) > rotation.inactivityTimeout.inSeconds {
            revoke()
            return .expiredInactivity
        }
        if rotation.presentedHash == stored.current {
            if let parent = stored.parent { stored.ancestors = Array(([parent] + stored.ancestors).prefix(32)) }
            stored.parent = stored.current
            stored.parentRotatedAt = now
            stored.current = rotation.childHash
            stored.sealedCurrent = rotation.sealedChild
            stored.record.refreshedAt = now
            sessionsByUser[rotation.userID]?[rotation.sessionID] = stored
            return .rotated
        }
        if rotation.presentedHash == stored.parent, let rotatedAt = stored.parentRotatedAt, let sealed = stored.sealedCurrent {
            if now.timeIntervalSince(rotatedAt) <= rotation.reuseInterval.inSeconds {
                return .reusedWithinInterval(sealedCurrent: sealed)
            }
            revoke()
            return .reuseDetected
        }
        if stored.ancestors.contains(rotation.presentedHash) {
            revoke()
            return .reuseDetected
        }
        return .notFound
    }
}
