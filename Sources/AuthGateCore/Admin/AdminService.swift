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

    /// The user's identities, oldest first.
    public func identities(of userID: String) async throws -> [IdentityRecord] {
        try await store.identities(ofUser: userID)
    }

    /// Stores a user whose metadata an operator changed.
    public func saveMetadata(of user: UserRecord, now: Date) async throws -> UserRecord {
        var user = user
        user.updatedAt = now
        try await store.saveUser(user)
        return user
    }

    /// Bans a user until `until`: its sessions end and every token it holds is refused at once.
    /// - Returns: the updated user, or nil when there is none.
    public func ban(_ userID: String, until: Date, now: Date) async throws -> UserRecord? {
        guard var user = try await store.user(id: userID) else { return nil }
        user.bannedUntil = until
        user.updatedAt = now
        try await store.saveUser(user)
        _ = try await signOutEverywhere(userID, reason: "ban", now: now)
        logger.notice("user banned", metadata: ["gw.user_id": "\(userID)", "gw.until": "\(until)"])
        return user
    }

    /// Lifts a ban (new sign-ins work again; ended sessions stay ended).
    public func liftBan(_ userID: String, now: Date) async throws -> UserRecord? {
        guard var user = try await store.user(id: userID) else { return nil }
        user.bannedUntil = nil
        user.updatedAt = now
        try await store.saveUser(user)
        logger.notice("user ban lifted", metadata: ["gw.user_id": "\(userID)"])
        return user
    }

    /// Deletes a user: its sessions end and its tokens are refused at once. A soft delete keeps
    /// the record (email, phone and identities removed, sign-in refused for good), as GoTrue's
    /// `should_soft_delete`; otherwise everything is removed.
    /// - Returns: false when there is no such user.
    public func deleteUser(_ userID: String, soft: Bool, now: Date) async throws -> Bool {
        guard var user = try await store.user(id: userID) else { return false }
        if soft {
            for identity in try await store.identities(ofUser: userID) {
                try await store.deleteIdentity(provider: identity.provider, subject: identity.subject, userID: userID)
            }
            if let email = user.email { try await store.releaseEmail(email, userID: userID) }
            _ = try await signOutEverywhere(userID, reason: "user_deleted", now: now)
            user.email = nil
            user.phone = nil
            user.deletedAt = now
            user.updatedAt = now
            try await store.saveUser(user)
        } else {
            let ended = try await store.deleteUser(userID)
            for sessionID in ended {
                try await store.appendRevocation(
                    RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: "user_deleted", at: now))
            }
            try await store.appendRevocation(RevocationEvent(kind: .user, userID: userID, sessionID: nil, reason: "user_deleted", at: now))
        }
        logger.notice("user deleted", metadata: ["gw.user_id": "\(userID)", "gw.soft": "\(soft)"])
        return true
    }

    // MARK: sessions

    /// The user's live sessions, oldest first.
    public func sessions(of userID: String) async throws -> [SessionRecord] {
        try await store.sessions(ofUser: userID)
    }

    /// Ends one session.
    /// - Returns: the session's user, or nil when no such session is alive.
    public func revokeSession(_ sessionID: String, now: Date) async throws -> String? {
        guard let userID = try await store.owner(ofSession: sessionID),
            try await store.deleteSessions(userID: userID, sessionIDs: [sessionID]).contains(sessionID)
        else { return nil }
        try await store.appendRevocation(RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: "admin", at: now))
        logger.notice("session revoked", metadata: ["gw.user_id": "\(userID)", "gw.session_id": "\(sessionID)"])
        return userID
    }

    /// Signs a user out everywhere: every session ends and every token issued until now is
    /// refused, even one whose session the store no longer knows.
    /// - Returns: the ids of the sessions that were alive.
    public func signOutEverywhere(_ userID: String, reason: String = "admin", now: Date) async throws -> [String] {
        let ended = try await store.deleteSessions(userID: userID, sessionIDs: try await store.sessions(ofUser: userID).map(\.id))
        for sessionID in ended {
            try await store.appendRevocation(RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: reason, at: now))
        }
        try await store.appendRevocation(RevocationEvent(kind: .user, userID: userID, sessionID: nil, reason: reason, at: now))
        logger.notice("user signed out everywhere", metadata: ["gw.user_id": "\(userID)", "gw.sessions": "\(ended.count)", "gw.reason": "\(reason)"])
        return ended
    }
}
