import Synchronization

/// The JSON text of users' `app_metadata` and `user_metadata` as access tokens carry them, kept
/// per user while the user's record is the same one. A refresh mints a token for a user read from
/// the store's record cache (or the memory store), whose metadata dictionaries are the very ones
/// the previous mint wrote; sorting and writing them again was most of the claims' JSON.
///
/// A kept text is reused only when both dictionaries share storage with the ones it was written
/// from: the same values in memory, not merely equal ones. Swift's `==` calls canonically
/// equivalent strings equal, and a token must carry the metadata's own bytes. The entry holds its
/// dictionaries, so the storage it compares against is never freed and reused meanwhile; a user
/// whose metadata changed, or was read again from new bytes, is written anew.
///
/// Bounded by `capacity` users (``FIFOCache``); texts over ``largestCached`` bytes are not kept.
final class ClaimsMetadataCache: Sendable {
    /// The two objects' JSON text.
    struct Text: Sendable {
        let appMetadata: [UInt8]
        let userMetadata: [UInt8]
    }

    /// Texts longer than this together are written and not kept.
    static var largestCached: Int { 8192 }

    /// A class: a lookup copies one reference out of the lock.
    private final class Entry: Sendable {
        let appMetadata: [String: JSONValue]
        let userMetadata: [String: JSONValue]
        let text: Text

        init(appMetadata: [String: JSONValue], userMetadata: [String: JSONValue], text: Text) {
            self.appMetadata = appMetadata
            self.userMetadata = userMetadata
            self.text = text
        }
    }

    private let entries: Mutex<FIFOCache<String, Entry>>

    /// `capacity` users' texts; 0 keeps none.
    init(capacity: Int) {
        entries = Mutex(FIFOCache(capacity: capacity))
    }

    /// `user`'s metadata text: the kept one when its dictionaries are the ones it was written
    /// from, else written now (and kept).
    func text(for user: UserRecord) -> Text {
        if let kept = entries.withLock({ $0[user.id] }), JSONObjectTextMemo.sharesStorage(kept.appMetadata, user.appMetadata),
            JSONObjectTextMemo.sharesStorage(kept.userMetadata, user.userMetadata)
        {
            return kept.text
        }
        let memo = JSONObjectTextMemo.shared
        let text = Text(appMetadata: memo.text(user.appMetadata), userMetadata: memo.text(user.userMetadata))
        if text.appMetadata.count + text.userMetadata.count <= Self.largestCached {
            let entry = Entry(appMetadata: user.appMetadata, userMetadata: user.userMetadata, text: text)
            entries.withLock { $0.insert(entry, for: user.id) }
        }
        return text
    }

    /// How many users' texts are kept.
    var count: Int { entries.withLock { $0.count } }
}
