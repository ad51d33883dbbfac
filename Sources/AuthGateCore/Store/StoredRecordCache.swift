import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Records already decoded, each kept under a key the caller knows before reading (a user's id, a
/// session's id) with the bytes it was decoded from. A read whose bytes are the kept ones (a user
/// calling `GET /user`, refreshing, signing in again) returns the kept record without parsing JSON;
/// other bytes are decoded and replace it. Decoding is a pure function of the bytes, so a hit is
/// never stale: a record that changed in Redis has other bytes.
///
/// Keys are short ids, so a lookup hashes a few dozen bytes and compares the record with `memcmp`.
/// Bounded by `capacity` keys (``FIFOCache``: the oldest insertion goes first); records over
/// ``largestCached`` bytes are decoded and not kept.
final class StoredRecordCache<Key: Hashable & Sendable, Record: Sendable>: Sendable {
    /// Stored records longer than this are not kept (a user's metadata can be large; the typical
    /// user, identity or session record is well under 1 KiB).
    static var largestCached: Int { 4096 }

    /// A class: a lookup copies one reference out of the lock, not the record's every field.
    private final class Entry: Sendable {
        let bytes: [UInt8]
        let record: Record

        init(bytes: [UInt8], record: Record) {
            self.bytes = bytes
            self.record = record
        }
    }

    private let entries: Mutex<FIFOCache<Key, Entry>>
    private let capacity: Int

    /// `capacity` 0 keeps nothing.
    init(capacity: Int) {
        self.capacity = max(0, capacity)
        entries = Mutex(FIFOCache(capacity: capacity))
    }

    /// The record `stored` decodes to: kept under `key` from the same bytes, or from `decode`
    /// (and then kept). Nothing is kept when `decode` throws.
    func record(_ key: Key, _ stored: ByteBuffer, decode: ([UInt8]) throws -> Record) rethrows -> Record {
        try recordAndBytes(key, stored, decode: decode).record
    }

    /// ``record(_:_:decode:)`` with `stored`'s bytes as an array: the kept one on a hit, so a
    /// caller that needs both (a compare-and-set stamp) copies nothing.
    func recordAndBytes(_ key: Key, _ stored: ByteBuffer, decode: ([UInt8]) throws -> Record) rethrows -> (record: Record, bytes: [UInt8]) {
        guard capacity > 0, stored.readableBytes <= Self.largestCached else {
            let bytes = Array(stored.readableBytesView)
            return (try decode(bytes), bytes)
        }
        if let kept = entries.withLock({ $0[key] }), Self.same(kept.bytes, stored) { return (kept.record, kept.bytes) }
        let bytes = Array(stored.readableBytesView)
        let record = try decode(bytes)
        entries.withLock { $0.insert(Entry(bytes: bytes, record: record), for: key) }
        return (record, bytes)
    }

    /// Keeps `record` as what `bytes` decode to, without decoding them: for a record this gateway
    /// has just written (`bytes` its encoding), so the first read after the write is a hit. The
    /// caller passes the record as a read would give it (`StoredRecordCoding.asRead`:
    /// dates cut to the milliseconds stored). A read still returns it only when the bytes it
    /// reads are these.
    func seed(_ key: Key, bytes: [UInt8], record: Record) {
        guard capacity > 0, bytes.count <= Self.largestCached else { return }
        entries.withLock { $0.insert(Entry(bytes: bytes, record: record), for: key) }
    }

    /// How many records are kept.
    var count: Int { entries.withLock { $0.count } }

    private static func same(_ kept: [UInt8], _ stored: ByteBuffer) -> Bool {
        guard kept.count == stored.readableBytes else { return false }
        return kept.withUnsafeBytes { kept in
            stored.withUnsafeReadableBytes { stored in
                guard let left = kept.baseAddress, let right = stored.baseAddress else { return true }
                return memcmp(left, right, kept.count) == 0
            }
        }
    }
}
