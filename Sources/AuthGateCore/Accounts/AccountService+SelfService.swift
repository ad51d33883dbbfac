import Logging

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What a user does to their own account: delete it (`DELETE /auth/v1/user`, an App Store rule for
/// apps with sign-in), unlink one of its identities (`DELETE /auth/v1/user/identities/{id}`), list
/// and end its sessions (`/auth/v1/user/sessions`).
extension AccountService {
    /// The caller's live sessions, oldest first.
    public func sessions(of caller: AuthenticatedUser) async throws -> [SessionRecord] {
        try await store.sessions(ofUser: caller.user.id)
    }

    /// Ends one of the caller's sessions (any device, the current one included) and announces it
    /// on the revocation stream, so every replica's proxy refuses its tokens within a second.
    /// - Returns: false when the caller has no such live session.
    public func endSession(of caller: AuthenticatedUser, sessionID: String, now: Date) async throws -> Bool {
        guard try await store.deleteSessions(userID: caller.user.id, sessionIDs: [sessionID]).contains(sessionID) else { return false }
        try await store.appendRevocation(
            RevocationEvent(kind: .session, userID: caller.user.id, sessionID: sessionID, reason: "user_ended_session", at: now))
        store.recordAudit(.now("session_revoked", userID: caller.user.id, detail: ["session_id": sessionID]))
        logger.notice("session ended by its user", metadata: ["gw.user_id": "\(caller.user.id)", "gw.session_id": "\(sessionID)"])
        return true
    }

    /// When the caller last signed in: the latest authentication of its session (its `amr`).
    func authenticatedAt(_ caller: AuthenticatedUser) -> Date? {
        let methods = caller.account.session?.amr ?? caller.claims.amr
        return methods.map(\.timestamp).max().map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// Deletes the caller's account: every session ends (the proxy refuses its tokens on every
    /// replica within a second), identities and indexes go, the provider tokens are queued for
    /// revocation, and the user is removed or kept scrubbed (`mode`).
    /// - Throws: ``AuthGateError/Code/reauthenticationNeeded`` when the caller signed in more than
    ///   `maxAuthAge` ago (nothing changes).
    public func deleteSelf(_ caller: AuthenticatedUser, mode: UsersConfiguration.SelfDeleteMode, maxAuthAge: Duration, now: Date) async throws {
        guard let signedInAt = authenticatedAt(caller), now.timeIntervalSince(signedInAt) <= maxAuthAge.inSeconds else {
            throw AuthGateError(.reauthenticationNeeded, "the caller's sign-in is older than users.self_delete_max_auth_age")
        }
        let admin = AdminService(store: store, logger: logger)
        guard try await admin.deleteUser(caller.user.id, soft: mode == .soft, now: now) else {
            throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist")
        }
        logger.notice("user deleted themselves", metadata: ["gw.user_id": "\(caller.user.id)", "gw.mode": "\(mode.rawValue)"])
    }

    /// Unlinks one of the caller's identities as GoTrue does: refused for the last identity and
    /// for one that is not the caller's; the user's email moves to a remaining identity's when it
    /// was the unlinked one's; `app_metadata.providers` is recomputed; sessions stay (their next
    /// refresh carries the new `app_metadata`). A provider token the identity held is queued for
    /// revocation ahead of the write (the worker leaves it alone if the write did not land).
    /// - Returns: the user as stored.
    public func unlinkIdentity(_ caller: AuthenticatedUser, identityID: String, now: Date) async throws -> UserRecord {
        let now = now.atStoredMillisecond
        let admin = AdminService(store: store, logger: logger)
        if let known = caller.account.identities.first(where: { $0.identityID == identityID }), caller.account.identities.count > 1 {
            _ = try await admin.queueRevocations(of: [known], except: [], now: now)
        }
        let updated = try await store.updateAccount(userID: caller.user.id, sessionID: caller.claims.sessionID, startingFrom: caller.account) {
            account in
            guard account.identities.count > 1 else {
                throw AuthGateError(.singleIdentityNotDeletable, "the user has one identity")
            }
            guard let target = account.identities.first(where: { $0.identityID == identityID }) else {
                throw AuthGateError(.identityNotFound, "no identity \(identityID) of the caller")
            }
            let remaining = account.identities.filter { $0.identityID != identityID }
            var user = account.user
            var change = AccountChange(base: account.stamp, user: user)
            change.removedIdentities = [IdentityKey(provider: target.provider, subject: target.subject)]
            if let email = user.email, target.email.map(EmailAddress.canonical) == EmailAddress.canonical(email),
                !remaining.contains(where: { $0.email.map(EmailAddress.canonical) == EmailAddress.canonical(email) })
            {
                let next = remaining.first { $0.email != nil && $0.identityData["email_verified"]?.lenientBoolValue == true }?.email
                change.releasedEmail = email
                change.claimedEmail = next
                user.email = next
                user.emailConfirmedAt = next == nil ? nil : (user.emailConfirmedAt ?? now)
            }
            user.appMetadata = Self.appMetadata(user.appMetadata, identities: remaining)
            user.updatedAt = now
            change.user = user
            return change
        } onConflict: { _ in
            AuthGateError(.emailConflictIdentityNotDeletable, "the remaining identity's email belongs to another user")
        }
        guard let updated else { throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist") }
        let provider = caller.account.identities.first { $0.identityID == identityID }?.provider ?? "unknown"
        store.recordAudit(.now("identity_unlinked", userID: caller.user.id, detail: ["provider": provider]))
        logger.notice("identity unlinked", metadata: ["gw.user_id": "\(caller.user.id)", "gw.identity_id": "\(identityID)"])
        return updated.change.user
    }
}
