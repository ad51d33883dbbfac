#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Nonces issued by AuthGate (`POST /auth/v1/nonce`): a client asks for one, gives its SHA-256 to
/// the provider and the raw value to AuthGate. With `require_server_nonce`, sign-in accepts only
/// nonces issued here, unexpired and unused; consuming one is atomic (Redis `GETDEL`).
public struct ServerNonceIssuer: Sendable {
    private let store: any AuthStore
    private let lifetime: Duration

    public init(store: any AuthStore, lifetime: Duration) {
        self.store = store
        self.lifetime = lifetime
    }

    /// A new nonce: 32 random bytes, base64url (43 characters), and when it expires.
    public func issue(now: Date) async throws -> (nonce: String, expiresAt: Date) {
        let raw = Base64URL.encode(Base64URL.randomBytes(32))
        let expiresAt = now.addingTimeInterval(lifetime.inSeconds)
        _ = try await store.insertIfAbsent(Self.key(for: raw), expiresAt: expiresAt)
        return (raw, expiresAt)
    }

    /// Uses up a nonce: true exactly once for a nonce issued here and not yet expired.
    public func consume(_ rawNonce: String) async throws -> Bool {
        guard let key = Self.storeKey(for: rawNonce) else { return false }
        return try await consume(storeKey: key)
    }

    /// Uses up the nonce stored under `key` (``storeKey(for:)``): true exactly once.
    func consume(storeKey key: String) async throws -> Bool {
        try await store.consume(key)
    }

    /// The store's key of a nonce issued here, to use up (``AuthStore/consume(_:)``); nil for a
    /// value this gateway never issues (empty, or over 256 bytes).
    static func storeKey(for rawNonce: String) -> String? {
        guard !rawNonce.isEmpty, rawNonce.utf8.count <= 256 else { return nil }
        return key(for: rawNonce)
    }

    private static func key(for rawNonce: String) -> String { "nonce:" + NonceRule.hashed(rawNonce) }
}
