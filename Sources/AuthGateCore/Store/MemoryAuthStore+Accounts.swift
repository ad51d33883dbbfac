#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension MemoryAuthStore {
    public func user(id: String) async throws -> UserRecord? { users[id] }

    public func identities(ofUser userID: String) async throws -> [IdentityRecord] {
        (identitiesByUser[userID] ?? []).sorted { $0.createdAt < $1.createdAt }
    }

    public func owner(ofIdentity provider: String, subject: String) async throws -> String? {
        identityOwners[IdentityKey(provider: provider, subject: subject)]
    }

    public func owner(ofEmail email: String) async throws -> String? { emailOwners[ByteExactString(email)] }

    public func account(userID: String, sessionID: String?) async throws -> AccountSnapshot? {
        snapshot(userID, sessionID: sessionID)
    }

    public func signInLookup(provider: String, subject: String, email: String?, taking marks: SingleUseMarks?) async throws -> SignInLookup {
        if let marks {
            if let replay = marks.replay, !recordIfAbsent(replay.key, expiresAt: replay.expiresAt) { throw marks.error(.replayed) }
            if let serverNonce = marks.serverNonce, takeExpiring(serverNonce) == nil { throw marks.error(.serverNonceUnknown) }
        }
        if let owner = identityOwners[IdentityKey(provider: provider, subject: subject)] {
            return SignInLookup(identityOwner: owner, emailHolder: nil, account: snapshot(owner, sessionID: nil))
        }
        guard let email, let holder = emailOwners[ByteExactString(email)] else {
            return SignInLookup(identityOwner: nil, emailHolder: nil, account: nil)
        }
        return SignInLookup(identityOwner: nil, emailHolder: holder, account: snapshot(holder, sessionID: nil))
    }

    /// The same checks, in the same order, as the Redis commit script, within one actor turn.
    public func commit(_ change: AccountChange) async throws -> AccountChangeOutcome {
        let id = change.user.id
        let fence = fences[id].flatMap { $0.expiresAt > Date() ? $0.token : nil }
        if let fence, fence != change.fence { return .fenced }
        guard stamp(of: id) == change.base else { return .stale }
        for key in change.claimedIdentities {
            if let owner = identityOwners[key], owner != id { return .identityTaken(owner: owner) }
        }
        if let email = change.claimedEmail, let holder = emailOwners[ByteExactString(email)], holder != id { return .emailTaken(holder: holder) }

        if fence != nil { fences.removeValue(forKey: id) }
        users[id] = change.user
        nextUserVersion &+= 1
        userVersions[id] = nextUserVersion
        for identity in change.savedIdentities { store(identity) }
        if let session = change.newSession {
            sessionsByUser[id, default: [:]][session.record.id] = StoredSession(record: session.record, current: session.refreshTokenHash)
        }
        for key in change.claimedIdentities { identityOwners[key] = id }
        if let email = change.claimedEmail { emailOwners[ByteExactString(email)] = id }
        for key in change.removedIdentities { removeIdentity(key, of: id) }
        releaseEmail(change.releasedEmail, of: id)
        var ended: [String] = []
        if let session = change.newSession, change.sessionLimit > 0, let sessions = sessionsByUser[id], sessions.count > change.sessionLimit {
            // The oldest first, as the Redis index orders them (creation time, then id).
            let oldest = sessions.values.map(\.record).filter { $0.id != session.record.id }
                .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.prefix(sessions.count - change.sessionLimit).map(\.id)
            for sessionID in oldest { sessionsByUser[id]?.removeValue(forKey: sessionID) }
            ended += oldest
        }
        if change.endsAllSessions { ended += (sessionsByUser.removeValue(forKey: id) ?? [:]).keys.sorted() }
        return .committed(endedSessions: ended)
    }

    public func fenceAccount(userID: String, token: String, lifetime: Duration) async throws -> Bool {
        let now = Date()
        if let held = fences[userID], held.expiresAt > now { return false }
        fences[userID] = (token, now.addingTimeInterval(lifetime.inSeconds))
        return true
    }

    public func updateIdentity(_ identity: IdentityRecord) async throws -> Bool {
        guard identitiesByUser[identity.userID]?.contains(where: { $0.key == identity.key }) == true
        else { return false }
        store(identity)
        return true
    }

    public func listUsers(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int) {
        let ordered = users.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        return (Array(ordered.dropFirst(max(0, offset)).prefix(max(0, limit))), ordered.count)
    }

    public func deleteIdentity(provider: String, subject: String, userID: String) async throws {
        removeIdentity(IdentityKey(provider: provider, subject: subject), of: userID)
    }

    public func deleteUser(_ userID: String) async throws -> [String] {
        for identity in identitiesByUser[userID] ?? [] {
            removeIdentity(identity.key, of: userID)
        }
        releaseEmail(users[userID]?.email, of: userID)
        let ended = Array((sessionsByUser.removeValue(forKey: userID) ?? [:]).keys).sorted()
        identitiesByUser.removeValue(forKey: userID)
        users.removeValue(forKey: userID)
        userVersions.removeValue(forKey: userID)
        fences.removeValue(forKey: userID)
        return ended
    }

    // MARK: helpers

    /// The stamp of the user as stored now (nil when there is none).
    func stamp(of userID: String) -> RecordStamp? {
        userVersions[userID].map { RecordStamp(Array(String($0).utf8)) }
    }

    func snapshot(_ userID: String, sessionID: String?) -> AccountSnapshot? {
        guard let user = users[userID], let stamp = stamp(of: userID) else { return nil }
        let session = sessionID.flatMap { sessionsByUser[userID]?[$0]?.record }
        return AccountSnapshot(user: user, stamp: stamp, identities: identitiesByUser[userID] ?? [], session: session)
    }

    private func store(_ identity: IdentityRecord) {
        var list = identitiesByUser[identity.userID] ?? []
        list.removeAll { $0.key == identity.key }
        list.append(identity)
        identitiesByUser[identity.userID] = list
    }

    /// Frees `email` in the email index when `userID` holds it.
    private func releaseEmail(_ email: String?, of userID: String) {
        guard let email else { return }
        let key = ByteExactString(email)
        if emailOwners[key] == userID { emailOwners.removeValue(forKey: key) }
    }

    private func removeIdentity(_ key: IdentityKey, of userID: String) {
        identitiesByUser[userID]?.removeAll { $0.key == key }
        if identityOwners[key] == userID { identityOwners.removeValue(forKey: key) }
    }
}
