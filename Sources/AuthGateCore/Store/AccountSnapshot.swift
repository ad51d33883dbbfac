/// One user's account as read in one store call: the record, the stamp a later
/// ``AccountChange`` names to be applied only if nothing changed since, the identities, and
/// (when a session was asked about) that session if it is alive.
public struct AccountSnapshot: Sendable {
    public var user: UserRecord
    /// Identifies the stored user record as read (see ``RecordStamp``).
    public let stamp: RecordStamp
    /// The user's identities, oldest first.
    public var identities: [IdentityRecord]
    /// The session asked about, when it is alive.
    public var session: SessionRecord?

    public init(user: UserRecord, stamp: RecordStamp, identities: [IdentityRecord], session: SessionRecord?) {
        self.user = user
        self.stamp = stamp
        var identities = identities
        if !Self.isOldestFirst(identities) { identities.sort { $0.createdAt < $1.createdAt } }
        self.identities = identities
        self.session = session
    }

    /// True when `identities` are already oldest first (then nothing is copied to sort them).
    static func isOldestFirst(_ identities: [IdentityRecord]) -> Bool {
        identities.indices.dropFirst().allSatisfy { identities[$0 - 1].createdAt <= identities[$0].createdAt }
    }
}

/// What a compare-and-set compares: the stored user record as it was read (its stored bytes on
/// Redis, a version number in memory). Opaque to callers.
public struct RecordStamp: Sendable, Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }
}
