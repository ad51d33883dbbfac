import Synchronization

/// The JSON text of metadata objects written lately (a user's `app_metadata` and `user_metadata`,
/// an identity's `identity_data`), each kept with the dictionary it was written from. A sign-in
/// writes the same provider claims into the user record, the identity record, the access token
/// and the answer's user and identity: with this memo the object is sorted and written once and
/// copied the other times.
///
/// A kept text is reused only when the dictionary shares storage with the one it was written from
/// (``sharesStorage(_:_:)``): the same members in memory, not merely equal ones, so the bytes are
/// the object's own. The entry holds its dictionary, so the storage it is compared against is
/// neither freed and reused nor changed in place while kept.
///
/// Bounded by `capacity` objects (``FIFOCache``, keyed by the storage's address: the oldest
/// insertion goes first), enough for the sign-ins in flight between a record's writing and the
/// answer's; objects over ``largestKept`` bytes and objects with fewer than two members are
/// written and not kept.
package final class JSONObjectTextMemo: Sendable {
    /// The memo every writer of metadata objects shares.
    package static let shared = JSONObjectTextMemo(capacity: 512)

    /// Texts longer than this are written and not kept.
    package static var largestKept: Int { 4096 }

    /// A class: a lookup copies one reference out of the lock.
    private final class Entry: Sendable {
        let members: [String: JSONValue]
        let text: [UInt8]

        init(members: [String: JSONValue], text: [UInt8]) {
            self.members = members
            self.text = text
        }
    }

    private let entries: Mutex<FIFOCache<UInt, Entry>>
    private let keeps: Bool

    /// `capacity` objects; 0 keeps none.
    package init(capacity: Int) {
        entries = Mutex(FIFOCache(capacity: capacity))
        keeps = capacity > 0 && MemoryLayout<[String: JSONValue]>.size == MemoryLayout<UInt>.size
    }

    /// Appends `members`' JSON text (``JSONValue/write(into:)`` of `.object(members)`) to `output`:
    /// the kept text when `members` is a dictionary written before and still kept, else written
    /// now (and kept).
    package func write(_ members: [String: JSONValue], into output: inout [UInt8]) {
        guard keeps, members.count > 1 else {
            JSONValue.object(members).write(into: &output)
            return
        }
        if let kept = keptText(members) {
            output.append(contentsOf: kept)
            return
        }
        let start = output.count
        JSONValue.object(members).write(into: &output)
        guard output.count - start <= Self.largestKept else { return }
        let entry = Entry(members: members, text: Array(output[start...]))
        entries.withLock { $0.insert(entry, for: Self.key(members)) }
    }

    /// The text kept for `members`' very storage, if any.
    package func keptText(_ members: [String: JSONValue]) -> [UInt8]? {
        guard keeps else { return nil }
        guard let kept = entries.withLock({ $0[Self.key(members)] }), Self.sharesStorage(kept.members, members) else { return nil }
        return kept.text
    }

    /// The storage's address: unique among kept entries, which hold their storage.
    private static func key(_ members: [String: JSONValue]) -> UInt {
        withUnsafeBytes(of: members) { $0.load(as: UInt.self) }
    }

    /// `members`' JSON text, as ``write(_:into:)`` appends it.
    package func text(_ members: [String: JSONValue]) -> [UInt8] {
        var output: [UInt8] = []
        write(members, into: &output)
        return output
    }

    /// Whether `a` and `b` are one dictionary storage: a dictionary's value is its storage's
    /// reference, so equal bits are the same storage, and so the same members, byte for byte.
    /// Unequal bits say nothing (two storages can hold equal members); the caller writes anew.
    package static func sharesStorage(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> Bool {
        withUnsafeBytes(of: a) { a in withUnsafeBytes(of: b) { b in a.elementsEqual(b) } }
    }
}
