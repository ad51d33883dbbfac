import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Access tokens already verified, until their `exp`, bounded in size. A hit skips signature
/// verification; it never skips the revocation check, which runs on every request.
///
/// Entries are keyed by the token's last 16 bytes (of its signature, in any token that verifies:
/// random in an ES256 signature) and hold the whole token, compared byte for byte on every hit, so
/// a known signature glued to another header or payload is not a hit, and neither is another
/// spelling of a cached token: Swift's `==` on strings is Unicode canonical
/// equivalence (U+212A KELVIN SIGN equals `K`), which would let a token that cannot verify pass
/// on the replicas that happen to cache its look-alike. Two cached tokens that share a key only
/// take each other's place. A fixed-size key hashes in a few nanoseconds; the signature's 86
/// characters as a `Substring` took most of an insert (each mint inserts its token).
final class VerifiedTokenCache: Sendable {
    /// A class: a lookup copies one reference out of the lock, not the claims' every field.
    private final class Entry: Sendable {
        let token: String
        let claims: AccessTokenClaims

        init(token: String, claims: AccessTokenClaims) {
            self.token = token
            self.claims = claims
        }
    }

    /// A token's last 16 bytes.
    private struct Key: Hashable {
        let head: UInt64
        let tail: UInt64

        init(last16 bytes: UnsafeBufferPointer<UInt8>) {
            let raw = UnsafeRawBufferPointer(bytes)
            head = raw.loadUnaligned(fromByteOffset: raw.count - 16, as: UInt64.self)
            tail = raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self)
        }
    }

    private let entries: Mutex<FIFOCache<Key, Entry>>

    init(capacity: Int) {
        entries = Mutex(FIFOCache(capacity: max(1, capacity)))
    }

    /// The claims of a cached, unexpired token.
    func claims(for token: String, now: Int64) -> AccessTokenClaims? {
        guard let key = Self.key(token) else { return nil }
        return entries.withLock { entries in
            guard let entry = entries[key], ByteExactString(entry.token) == ByteExactString(token) else { return nil }
            guard entry.claims.exp > now else {
                entries.removeValue(forKey: key)
                return nil
            }
            return entry.claims
        }
    }

    /// Remembers a verified token. When full, the one remembered longest ago goes (an expired
    /// token also goes when it is next presented).
    func insert(_ token: String, claims: AccessTokenClaims) {
        guard let key = Self.key(token) else { return }
        entries.withLock { $0.insert(Entry(token: token, claims: claims), for: key) }
    }

    /// The claims of `token`: cached, or from `verify` (and then remembered). `cached` says which.
    func claims(for token: String, now: Date, verify: (String, Date) throws -> AccessTokenClaims) rethrows -> (
        claims: AccessTokenClaims, cached: Bool
    ) {
        let seconds = Int64(now.timeIntervalSince1970)
        if let cached = claims(for: token, now: seconds) { return (cached, true) }
        let claims = try verify(token, now)
        insert(token, claims: claims)
        return (claims, false)
    }

    var count: Int { entries.withLock { $0.count } }

    /// Forgets every token (the signing keys changed: a removed key's tokens must verify again, and fail).
    func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    /// The key of `token`: its last 16 bytes; nil for anything shorter, which no signature is.
    private static func key(_ token: String) -> Key? {
        let bytes = token.utf8
        guard bytes.count >= 16 else { return nil }
        return bytes.withContiguousStorageIfAvailable(Key.init(last16:))
            ?? Array(bytes.suffix(16)).withUnsafeBufferPointer(Key.init(last16:))
    }
}
