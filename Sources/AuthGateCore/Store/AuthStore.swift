#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Where AuthGate keeps users, identities, sessions, nonces and replay windows.
///
/// Two implementations pass one conformance suite: ``MemoryAuthStore`` (one process, development
/// and tests) and ``RedisAuthStore`` (shared by every replica). Later capabilities (users,
/// sessions, replay guard) extend this protocol.
public protocol AuthStore: Sendable {
    /// A short name for logs and `/readyz` (`memory`, `redis`).
    var kind: String { get }

    /// Succeeds when the store can serve requests now.
    /// - Throws: ``AuthGateError`` with code ``AuthGateError/Code/storeUnavailable`` saying why not.
    func checkReadiness() async throws

    /// Records `key` until `expiresAt` unless it is already recorded: true when this call recorded
    /// it. Atomic across every replica sharing the store (replay windows, issued nonces).
    func insertIfAbsent(_ key: String, expiresAt: Date) async throws -> Bool

    /// Removes `key` and returns true when it was recorded and unexpired: true exactly once.
    func consume(_ key: String) async throws -> Bool

    /// Adds one to the counter `key` (created expiring at `expiresAt`) and returns the new value.
    func increment(_ key: String, expiresAt: Date) async throws -> Int

    // MARK: users and identities

    /// The user with this id.
    func user(id: String) async throws -> UserRecord?
    /// Creates or replaces a user record.
    func saveUser(_ user: UserRecord) async throws
    /// The user's identities, oldest first.
    func identities(ofUser userID: String) async throws -> [IdentityRecord]
    /// Creates or replaces an identity of its user.
    func saveIdentity(_ identity: IdentityRecord) async throws
    /// The owner of (provider, subject), if any.
    func owner(ofIdentity provider: String, subject: String) async throws -> String?
    /// Makes `userID` the owner of (provider, subject) unless someone is; returns the owner.
    /// Atomic across replicas: concurrent first sign-ins agree on one user.
    func claimIdentity(provider: String, subject: String, userID: String) async throws -> String
    /// The user holding this (lower-cased, verified) email, if any.
    func owner(ofEmail email: String) async throws -> String?
    /// Makes `userID` the holder of `email` unless someone is; returns the holder.
    func claimEmail(_ email: String, userID: String) async throws -> String
    /// Removes the email index entry when it points at `userID` (a soft-deleted user, a user whose
    /// email changed); another holder's entry is left alone.
    func releaseEmail(_ email: String, userID: String) async throws

    // MARK: sessions

    /// Stores a new session whose current refresh token has `refreshTokenHash`.
    func createSession(_ session: SessionRecord, refreshTokenHash: String) async throws
    /// The session, if it is alive.
    func session(userID: String, sessionID: String) async throws -> SessionRecord?
    /// The user's live sessions, oldest first.
    func sessions(ofUser userID: String) async throws -> [SessionRecord]
    /// Rotation and reuse detection, atomically (a Lua script on Redis).
    func rotateRefreshToken(_ rotation: RefreshRotation) async throws -> RefreshRotationOutcome
    /// Deletes these sessions of the user; returns the ids that existed.
    func deleteSessions(userID: String, sessionIDs: [String]) async throws -> [String]
    /// Appends to the revocation stream the proxies tail.
    func appendRevocation(_ event: RevocationEvent) async throws

    // MARK: administration

    /// Users in creation order: `limit` of them from `offset`, and how many there are.
    func listUsers(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int)
    /// The user a session belongs to, if the session was created and not deleted since.
    func owner(ofSession sessionID: String) async throws -> String?
    /// Removes one identity of `userID` (and its index entry when it points at that user).
    func deleteIdentity(provider: String, subject: String, userID: String) async throws
    /// Removes a user with its identities, email and identity indexes and sessions; returns the
    /// ids of the sessions that were alive.
    func deleteUser(_ userID: String) async throws -> [String]
}
