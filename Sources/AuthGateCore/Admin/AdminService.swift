public import Logging

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What operators do to users and sessions, for the `authgate` admin commands and the admin API
/// alike. Every ending of a session or of a user's tokens is appended to the revocation stream,
/// so every gateway refuses the tokens within a second (not at their expiry).
public struct AdminService: Sendable {
    private let store: any AuthStore
    private let logger: Logger

    public init(store: any AuthStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    // MARK: users

    /// Users in creation order, `limit` from `offset`, and how many there are.
    public func users(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int) {
        try await store.listUsers(offset: offset, limit: limit)
    }

    /// The user named by `reference`: a user id, `provider:subject`, or an email address.
    public func findUser(_ reference: String) async throws -> UserRecord? {
        let text = reference.trimmed
        if let id = UUIDBytes.canonical(text), let user = try await store.user(id: id) { return user }
        if text.contains("@"), let owner = try await store.owner(ofEmail: EmailAddress.canonical(text)) { return try await store.user(id: owner) }
        if let colon = text.firstIndex(of: ":") {
            let provider = String(text[..<colon])
            let subject = String(text[text.index(after: colon)...])
            if let owner = try await store.owner(ofIdentity: provider, subject: subject) { return try await store.user(id: owner) }
        }
        return nil
    }

    /// What an operator creates a user with (GoTrue's `POST /admin/users`).
    public struct NewUser: Sendable {
        /// The user's email, canonical (``EmailAddress/canonical(_:)``: the initializer makes it so).
        public var email: String
        /// The operator vouches for the email: `email_confirmed_at` is set.
        public var emailConfirmed: Bool
        public var userMetadata: [String: JSONValue]
        public var appMetadata: [String: JSONValue]
        public var role: String
        public var bannedUntil: Date?

        public init(
            email: String, emailConfirmed: Bool, userMetadata: [String: JSONValue] = [:], appMetadata: [String: JSONValue] = [:],
            role: String = "authenticated", bannedUntil: Date? = nil
        ) {
            self.email = EmailAddress.canonical(email)
            self.emailConfirmed = emailConfirmed
            self.userMetadata = userMetadata
            self.appMetadata = appMetadata
            self.role = role
            self.bannedUntil = bannedUntil
        }
    }

    /// Creates a user with no identity and no session, its email claimed in one write: a later
    /// sign-in whose provider vouches for that (ASCII) email links to it, as automatic linking
    /// links to any user holding the email, also while `users.disable_signup` keeps new users out
    /// (an invitation). The audit event names the operator of the request (``AuditContext``).
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/emailExists`` when another user holds the email.
    public func createUser(_ new: NewUser, audience: String, now: Date) async throws -> UserRecord {
        let now = now.atStoredMillisecond
        let user = UserRecord(
            id: UUIDBytes.random(), aud: audience, role: new.role, email: new.email, phone: nil,
            emailConfirmedAt: new.emailConfirmed ? now : nil, appMetadata: new.appMetadata.filter { $0.value != .null },
            userMetadata: new.userMetadata.filter { $0.value != .null }, isAnonymous: false, createdAt: now, updatedAt: now, lastSignInAt: nil,
            bannedUntil: new.bannedUntil)
        var change = AccountChange(base: nil, user: user)
        change.claimedEmail = new.email
        switch try await store.commit(change) {
        case .committed:
            store.recordAudit(.now("user_signedup", userID: user.id, detail: ["provider": "admin"]))
            return user
        case .emailTaken:
            throw AuthGateError(.emailExists, "another user holds the email")
        case .stale, .identityTaken, .fenced:
            throw AuthGateError(.storeCorrupt, "a new random user id was already taken")
        }
    }

    /// The user's identities, oldest first.
    public func identities(of userID: String) async throws -> [IdentityRecord] {
        try await store.identities(ofUser: userID)
    }

    /// Changes a user as `edit` says (an operator's metadata change), by compare-and-set: `edit`
    /// runs on the stored user and runs again if the user changed before the write landed.
    /// Dates are stamped at the millisecond the store keeps, as every account change's are, so
    /// the answer is the user every later read gives.
    /// - Returns: the updated user, or nil when there is none.
    public func updateUser(_ userID: String, now: Date, _ edit: (inout UserRecord) throws -> Void) async throws -> UserRecord? {
        let now = now.atStoredMillisecond
        let user = try await store.updateAccount(userID: userID) { account in
            var user = account.user
            try edit(&user)
            user.updatedAt = now
            return AccountChange(base: account.stamp, user: user)
        }?.change.user
        if user != nil { store.recordAudit(.now("user_modified", userID: userID)) }
        return user
    }

    /// Bans a user until `until`: the ban and the end of its sessions are one write, and every
    /// token it holds is refused at once.
    /// - Returns: the updated user, or nil when there is none.
    public func ban(_ userID: String, until: Date, now: Date) async throws -> UserRecord? {
        let (until, now) = (until.atStoredMillisecond, now.atStoredMillisecond)
        let updated = try await store.updateAccount(userID: userID, fenced: true) { account in
            var user = account.user
            user.bannedUntil = until
            user.updatedAt = now
            var change = AccountChange(base: account.stamp, user: user)
            change.endsAllSessions = true
            return change
        }
        guard let updated else { return nil }
        try await announceSignOut(userID, endedSessions: updated.endedSessions, reason: "ban", now: now)
        store.recordAudit(.now("user_banned", userID: userID, detail: ["until": "\(until.unixSeconds)"]))
        logger.notice("user banned", metadata: ["gw.user_id": "\(userID)", "gw.until": "\(until)"])
        return updated.change.user
    }

    /// Lifts a ban (new sign-ins work again; ended sessions stay ended).
    public func liftBan(_ userID: String, now: Date) async throws -> UserRecord? {
        let user = try await updateUser(userID, now: now) { $0.bannedUntil = nil }
        if user != nil {
            store.recordAudit(.now("user_unbanned", userID: userID))
            logger.notice("user ban lifted", metadata: ["gw.user_id": "\(userID)"])
        }
        return user
    }

    /// Deletes a user: its sessions end and its tokens are refused at once. A soft delete keeps
    /// the record (email, phone and identities removed, sign-in refused for good), as GoTrue's
    /// `should_soft_delete`, in one write; otherwise everything is removed, in one write.
    ///
    /// The provider refresh tokens its identities hold (Apple's) go into the revocation outbox
    /// first, so a deletion that fails half-way still revokes them; `notRevoking` names providers
    /// that told us themselves (Apple's `account-delete`): their tokens are dropped, not revoked.
    /// - Returns: false when there is no such user.
    public func deleteUser(_ userID: String, soft: Bool, notRevoking: Set<String> = [], now: Date) async throws -> Bool {
        let revocable = { (identities: [IdentityRecord]) in identities.filter { !notRevoking.contains($0.provider) } }
        var queued = try await queueRevocations(of: revocable(try await store.identities(ofUser: userID)), except: [], now: now)
        if soft {
            let deletedAt = now.atStoredMillisecond
            let updated = try await store.updateAccount(userID: userID, fenced: true) { account in
                var user = account.user
                let email = user.email
                user.email = nil
                user.phone = nil
                user.deletedAt = deletedAt
                user.updatedAt = deletedAt
                var change = AccountChange(base: account.stamp, user: user)
                change.removedIdentities = account.identities.map { IdentityKey(provider: $0.provider, subject: $0.subject) }
                change.releasedEmail = email
                change.endsAllSessions = true
                return change
            }
            guard let updated else { return false }
            // A token stored between the read above and the write: queued now, from what was removed.
            queued = try await queueRevocations(of: revocable(updated.account.identities), except: queued, now: now)
            try await announceSignOut(userID, endedSessions: updated.endedSessions, reason: "user_deleted", now: now)
        } else {
            guard try await store.user(id: userID) != nil else { return false }
            let ended = try await store.deleteUser(userID)
            try await announceSignOut(userID, endedSessions: ended, reason: "user_deleted", now: now)
        }
        store.recordAudit(.now("user_deleted", userID: userID, detail: ["soft": "\(soft)", "provider_tokens_queued": "\(queued.count)"]))
        logger.notice("user deleted", metadata: ["gw.user_id": "\(userID)", "gw.soft": "\(soft)", "gw.provider_tokens_queued": "\(queued.count)"])
        return true
    }

    /// Puts the provider refresh tokens of `identities` (those not in `except`, by sealed token)
    /// into the revocation outbox.
    /// - Returns: the sealed tokens queued, with `except`.
    func queueRevocations(of identities: [IdentityRecord], except: Set<String>, now: Date) async throws -> Set<String> {
        let entries = identities.filter { $0.sealedRefreshToken.map { !except.contains($0) } ?? false }.compactMap {
            ProviderRevocation.revoking($0, now: now)
        }
        try await store.enqueueProviderRevocations(entries)
        for entry in entries {
            logger.notice(
                "provider token queued for revocation",
                metadata: ["gw.provider": "\(entry.provider)", "gw.user_id": "\(entry.userID)", "gw.revocation_id": "\(entry.id)"])
        }
        return except.union(entries.map(\.sealedToken))
    }

    // MARK: sessions

    /// The user's live sessions, oldest first.
    public func sessions(of userID: String) async throws -> [SessionRecord] {
        try await store.sessions(ofUser: userID)
    }

    /// Ends one session.
    /// - Returns: the session's user, or nil when no such session is alive.
    public func revokeSession(_ sessionID: String, now: Date) async throws -> String? {
        // The id in its one form (lower case, as stored): a copy in capitals is the same session.
        guard let sessionID = UUIDBytes.canonical(sessionID.trimmed), let userID = try await store.owner(ofSession: sessionID),
            try await store.deleteSessions(userID: userID, sessionIDs: [sessionID]).contains(sessionID)
        else { return nil }
        try await store.appendRevocation(RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: "admin", at: now))
        store.recordAudit(.now("session_revoked", userID: userID, detail: ["session_id": sessionID]))
        logger.notice("session revoked", metadata: ["gw.user_id": "\(userID)", "gw.session_id": "\(sessionID)"])
        return userID
    }

    /// Signs a user out everywhere: every session ends and every token issued until now is
    /// refused, even one whose session the store no longer knows.
    /// - Returns: the ids of the sessions that were alive.
    public func signOutEverywhere(_ userID: String, reason: String = "admin", now: Date) async throws -> [String] {
        let ended = try await store.deleteSessions(userID: userID, sessionIDs: try await store.sessions(ofUser: userID).map(\.id))
        try await announceSignOut(userID, endedSessions: ended, reason: reason, now: now)
        store.recordAudit(.now("user_signed_out_everywhere", userID: userID, detail: ["reason": reason, "sessions": "\(ended.count)"]))
        logger.notice("user signed out everywhere", metadata: ["gw.user_id": "\(userID)", "gw.sessions": "\(ended.count)", "gw.reason": "\(reason)"])
        return ended
    }

    /// Appends the end of each session, then of every token of the user, to the revocation stream.
    private func announceSignOut(_ userID: String, endedSessions: [String], reason: String, now: Date) async throws {
        for sessionID in endedSessions {
            try await store.appendRevocation(RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: reason, at: now))
        }
        try await store.appendRevocation(RevocationEvent(kind: .user, userID: userID, sessionID: nil, reason: reason, at: now))
    }
}
