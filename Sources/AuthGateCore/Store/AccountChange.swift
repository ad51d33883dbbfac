/// Every write a request makes to one user's account, applied by the store all at once (one Lua
/// script on Redis, one actor turn in memory) or not at all.
///
/// The user record is written whole, so the change names the ``RecordStamp`` it was computed from
/// (``base``): if the record changed since (a ban, a soft delete, another update) or was deleted,
/// nothing is written and the caller reads again (``AccountChangeOutcome/stale``). That is how a
/// ban racing `PUT /user` is never lost. Index claims are checked before anything is written.
public struct AccountChange: Sendable {
    /// The stamp the change was computed from; nil to create a user that must not exist yet.
    public var base: RecordStamp?
    /// The user record to store.
    public var user: UserRecord
    /// Identities to store (created or replaced) under the user.
    public var savedIdentities: [IdentityRecord] = []
    /// Identities to remove, with their index entries where they point at this user.
    public var removedIdentities: [IdentityKey] = []
    /// Identity index entries that must be free or already this user's; taken if free.
    public var claimedIdentities: [IdentityKey] = []
    /// An email index entry that must be free or already this user's; taken if free.
    public var claimedEmail: String?
    /// An email index entry removed where it points at this user.
    public var releasedEmail: String?
    /// A session to start, with its first refresh token's hash.
    public var newSession: (record: SessionRecord, refreshTokenHash: String)?
    /// With ``newSession``: the most sessions the user keeps. The oldest others (by creation) end
    /// with the change, their ids in the outcome; 0 for no limit.
    public var sessionLimit = 0
    /// Ends every session of the user (their ids come back in the outcome).
    public var endsAllSessions = false
    /// The token of the fence this change holds (and lifts when it commits); see
    /// ``AuthStore/fenceAccount(userID:token:lifetime:)``.
    public var fence: String?

    public init(base: RecordStamp?, user: UserRecord) {
        self.base = base
        self.user = user
    }
}

/// What the store did with an ``AccountChange``.
public enum AccountChangeOutcome: Sendable, Hashable {
    /// Everything was written; the ids of the sessions the change ended.
    case committed(endedSessions: [String])
    /// The user record is not the one the change was computed from (or a user to create exists):
    /// nothing was written; read again and recompute.
    case stale
    /// An operator's fence holds the account (a ban or a deletion is being written): nothing was
    /// written; try again shortly.
    case fenced
    /// A claimed identity belongs to another user: nothing was written.
    case identityTaken(owner: String)
    /// The claimed email belongs to another user: nothing was written.
    case emailTaken(holder: String)
}
