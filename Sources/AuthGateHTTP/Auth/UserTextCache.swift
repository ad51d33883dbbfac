import AuthGateCore
import Synchronization

/// Users' GoTrue JSON text (``GoTrueJSON/userText(_:identities:)``) already written, each kept
/// with the user and identities it was written from. `GET /user` and every token answer carry
/// the user; a user calling again with nothing changed gets the kept text instead of a second
/// rendering of its metadata.
///
/// The text is a pure function of the user and its identities, and a kept text is reused only
/// when both are equal to the ones it was written from, so nothing stale is served: a ban, a
/// sign-in or a metadata change makes a record that differs. Comparing is cheap in the common
/// case: records read again from the store's record cache (or the memory store) share their
/// strings', dictionaries' and arrays' storage with the kept ones, and Swift's equality returns
/// at once for shared storage.
///
/// Equality here is Swift's, under which two strings that are canonically equivalent Unicode are
/// equal though their bytes differ. A kept text could thus outlive a respelling of a metadata
/// value into an equivalent form, were that the only change; every write the gateway makes to a
/// user or an identity also moves a date the comparison sees (`updated_at`, `last_sign_in_at`,
/// `banned_until`, `deleted_at`, kept to the millisecond) or the identities themselves, so only
/// a respelling written within the same millisecond as the text's own change could go unseen, and
/// then the kept text is the same user's text of a moment before, equivalent to the new one.
///
/// Users read from the store (`GET /user`, a refresh) and users just written by a sign-in,
/// an anonymous sign-up or `PUT /user` belong here: account changes stamp their records at the
/// millisecond the store keeps (`Date.atStoredMillisecond`), so the user as written equals the
/// user read back, and a session's first refresh or `GET /user` finds the sign-in's text.
///
/// Bounded by `capacity` users (``FIFOCache``: the oldest insertion goes first); texts over
/// ``largestCached`` bytes are written and not kept.
public final class UserTextCache: Sendable {
    /// Texts longer than this are not kept (a user's metadata can be large; a typical user with
    /// one identity is about 1 KiB).
    static var largestCached: Int { 8192 }

    /// A class: a lookup copies one reference out of the lock, not the user's every field.
    private final class Entry: Sendable {
        let user: UserRecord
        let identities: [IdentityRecord]
        let text: [UInt8]

        init(user: UserRecord, identities: [IdentityRecord], text: [UInt8]) {
            self.user = user
            self.identities = identities
            self.text = text
        }
    }

    private let entries: Mutex<FIFOCache<String, Entry>>

    /// `capacity` users' texts; 0 keeps none.
    public init(capacity: Int) {
        entries = Mutex(FIFOCache(capacity: capacity))
    }

    /// `user`'s JSON text with `identities`: the kept one when both are unchanged, else written
    /// now (and kept).
    func text(_ user: UserRecord, identities: [IdentityRecord]) -> [UInt8] {
        if let kept = entries.withLock({ $0[user.id] }), kept.user == user, kept.identities == identities {
            return kept.text
        }
        var text = GoTrueJSON.userText(user, identities: identities)
        if text.count <= Self.largestCached {
            // The writer's buffer grows by doubling: kept for minutes, a copy of the exact size
            // (which jemalloc still rounds up to its size class, at most a quarter more).
            if text.capacity > Self.keptCapacity(text.count) { text = text.withUnsafeBufferPointer { Array($0) } }
            entries.withLock { $0.insert(Entry(user: user, identities: identities, text: text), for: user.id) }
        }
        return text
    }

    /// The most capacity a kept text of `count` bytes may hold: an exact allocation rounded up to
    /// one of jemalloc's size classes (four per doubling) and the array's header.
    static func keptCapacity(_ count: Int) -> Int { count + count / 4 + 64 }

    /// How many users' texts are kept.
    var count: Int { entries.withLock { $0.count } }
}
