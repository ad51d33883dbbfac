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

    /// Whether the store may drop records on its own (``KeyEviction``).
    /// - Throws: ``AuthGateError`` with code ``AuthGateError/Code/storeUnavailable`` when it cannot be asked.
    func keyEviction() async throws -> KeyEviction

    /// Records `key` until `expiresAt` unless it is already recorded: true when this call recorded
    /// it. Atomic across every replica sharing the store (replay windows, issued nonces).
    func insertIfAbsent(_ key: String, expiresAt: Date) async throws -> Bool

    /// Whether `key` is recorded and unexpired (see ``insertIfAbsent(_:expiresAt:)``).
    func contains(_ key: String) async throws -> Bool

    /// Removes `key` and returns true when it was recorded and unexpired: true exactly once.
    func consume(_ key: String) async throws -> Bool

    /// Records `value` under `key` until `expiresAt` unless `key` is recorded: true when this call
    /// recorded it (a browser flow's state, its authorization code).
    func insertIfAbsent(_ key: String, value: String, expiresAt: Date) async throws -> Bool

    /// The value recorded under `key` (``insertIfAbsent(_:value:expiresAt:)``), while unexpired.
    func value(of key: String) async throws -> String?

    /// Removes `key` and returns its value when it was recorded and unexpired: one caller gets it.
    func take(_ key: String) async throws -> String?

    /// Counts one request against a sliding-window budget (``SlidingWindow``): reads the counters
    /// of the current window (`currentKey`) and the one before (`previousKey`), and adds one to the
    /// current one (expiring at ``SlidingWindow/currentExpiresAt``) only when the window admits the
    /// request. Atomic across every replica sharing the store.
    func countRequest(in window: SlidingWindow, currentKey: String, previousKey: String) async throws -> SlidingWindow.Counts

    // MARK: users and identities

    /// The user with this id.
    func user(id: String) async throws -> UserRecord?
    /// The user's identities, oldest first.
    func identities(ofUser userID: String) async throws -> [IdentityRecord]
    /// The owner of (provider, subject), if any.
    func owner(ofIdentity provider: String, subject: String) async throws -> String?
    /// The user holding this (lower-cased, verified) email, if any.
    func owner(ofEmail email: String) async throws -> String?
    /// The user's record, stamp and identities, and the session `sessionID` if it is alive, in
    /// one call (one round trip on Redis); nil when there is no such user.
    func account(userID: String, sessionID: String?) async throws -> AccountSnapshot?
    /// What a sign-in with (provider, subject) decides on, in one call: the identity's owner and
    /// account, or else the holder of `email` (when given) and its account. With `marks`, takes
    /// them first, in the same atomic step (one round trip on Redis): the replay record, then the
    /// server nonce; nothing is read when one is refused.
    /// - Throws: ``SingleUseMarks/error(_:)`` for a refused mark.
    func signInLookup(provider: String, subject: String, email: String?, taking marks: SingleUseMarks?) async throws -> SignInLookup
    /// Applies every write of `change` at once, or none (see ``AccountChange``).
    func commit(_ change: AccountChange) async throws -> AccountChangeOutcome
    /// Holds every other ``AccountChange`` to the user off (they get
    /// ``AccountChangeOutcome/fenced``) until a change carrying `token` commits or `lifetime`
    /// passes: how a ban or a deletion goes through while the user floods `PUT /user`. False when
    /// another fence holds the account.
    func fenceAccount(userID: String, token: String, lifetime: Duration) async throws -> Bool
    /// Replaces an identity that is still linked to its user (a field-level update: an identity
    /// removed meanwhile is not brought back). True when it was replaced.
    func updateIdentity(_ identity: IdentityRecord) async throws -> Bool

    // MARK: sessions

    /// Stores a new session whose current refresh token has `refreshTokenHash` (its record, the
    /// user's session index and the session's owner entry, at once).
    func createSession(_ session: SessionRecord, refreshTokenHash: String) async throws
    /// The session, if it is alive.
    func session(userID: String, sessionID: String) async throws -> SessionRecord?
    /// The user's live sessions, oldest first.
    func sessions(ofUser userID: String) async throws -> [SessionRecord]
    /// Rotation and reuse detection, atomically (a Lua script on Redis), refused for a banned or
    /// deleted user; when the session goes on, the account with that session comes back in the
    /// same call.
    func rotateRefreshToken(_ rotation: RefreshRotation) async throws -> (outcome: RefreshRotationOutcome, account: AccountSnapshot?)
    /// Deletes these sessions of the user at once; returns the ids that existed.
    func deleteSessions(userID: String, sessionIDs: [String]) async throws -> [String]
    /// Appends to the revocation stream the proxies tail.
    func appendRevocation(_ event: RevocationEvent) async throws

    // MARK: administration

    /// Users in creation order: `limit` of them from `offset`, and how many there are.
    func listUsers(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int)
    /// The user a session belongs to, if the session was created and not deleted since.
    func owner(ofSession sessionID: String) async throws -> String?
    /// Removes one identity of `userID` (and its index entry when it points at that user), at once.
    func deleteIdentity(provider: String, subject: String, userID: String) async throws
    /// Removes a user with its identities, email and identity indexes and sessions, at once;
    /// returns the ids of the sessions that were alive.
    func deleteUser(_ userID: String) async throws -> [String]

    // MARK: provider token revocations (the outbox)

    /// Puts entries in the revocation outbox, due at their `nextAttemptAt`.
    func enqueueProviderRevocations(_ entries: [ProviderRevocation]) async throws
    /// Up to `limit` entries due at `now`, each leased to the caller until `now + lease` (another
    /// claim does not return it meanwhile), atomically across replicas; each comes back with its
    /// ``ProviderRevocation/lease`` set.
    func claimProviderRevocations(now: Date, lease: Duration, limit: Int) async throws -> [ProviderRevocation]
    /// Records how a claimed entry's call ended: removes it (`finished`), stores it due again
    /// (`retry`) or as given up (`failed`). Nothing happens when the caller's lease was lost
    /// (expired and claimed by another): false then.
    func settleProviderRevocation(_ entry: ProviderRevocation, as settlement: ProviderRevocation.Settlement) async throws -> Bool
    /// Every entry in the outbox, pending and given up, oldest first.
    func providerRevocations() async throws -> [ProviderRevocation]

    // MARK: the audit trail

    /// Records an audit event without waiting for the store (written by ``flushAudit()``).
    func recordAudit(_ event: AuditEvent)
    /// Writes every recorded event not written yet (one call on Redis).
    func flushAudit() async throws
    /// Events of the trail as `query` asks, after writing those waiting.
    func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent]
    /// Whether the event with this id is still in the trail (which keeps about the newest
    /// 100,000 and drops the oldest first): while it is, no event after it has been dropped.
    func auditEventExists(id: String) async throws -> Bool
}
