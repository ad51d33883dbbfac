import Testing

@testable import AuthGateCore

/// A cache hit is the very token that was verified, byte for byte.
@Suite("Verified token cache")
struct VerifiedTokenCacheTests {
    private static let claims = AccessTokenClaims(
        iss: "https://auth.example.com/auth/v1", sub: "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a11", aud: "authenticated", exp: 2_000_000_000,
        iat: 1_900_000_000, email: "", phone: "", appMetadata: [:], userMetadata: [:], role: "authenticated", aal: "aal1", amr: [],
        sessionID: "9e1f0000-0000-4000-8000-000000000001", isAnonymous: true)

    @Test("a cached token is a hit until its exp; another token with its signature is not")
    func hits() {
        let cache = VerifiedTokenCache(capacity: 4)
        let token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJKIn0.SIGK"
        cache.insert(token, claims: Self.claims)
        #expect(cache.claims(for: token, now: 1_900_000_001)?.sub == Self.claims.sub)
        #expect(cache.claims(for: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJKIn0.SIGK", now: 1_900_000_001) == nil)
        #expect(cache.claims(for: token, now: 2_000_000_000) == nil, "expired")
    }

    @Test(
        "another spelling of a cached token is not a hit (Unicode equivalents of its ASCII)",
        arguments: [
            "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ\u{212A}In0.SIGK",  // KELVIN SIGN for K in the payload
            "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJKIn0.SIG\u{212A}",  // ... in the signature (the key)
            "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJKIn0.SIGK\u{0301}"  // a combining mark after the last letter
        ])
    func lookAlikes(_ lookAlike: String) {
        let cache = VerifiedTokenCache(capacity: 4)
        let token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJKIn0.SIGK"
        cache.insert(token, claims: Self.claims)
        #expect(cache.claims(for: lookAlike, now: 1_900_000_001) == nil)
        #expect(cache.claims(for: token, now: 1_900_000_001) != nil)
    }

    @Test("two tokens that end alike take each other's place; a token under 16 bytes is never kept")
    func sharedKeys() {
        let cache = VerifiedTokenCache(capacity: 4)
        let first = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJBIn0.same-last-sixteen-bytes"
        let second = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJCIn0.same-last-sixteen-bytes"
        cache.insert(first, claims: Self.claims)
        #expect(cache.claims(for: second, now: 1_900_000_001) == nil)
        cache.insert(second, claims: Self.claims)
        #expect(cache.claims(for: second, now: 1_900_000_001) != nil)
        #expect(cache.claims(for: first, now: 1_900_000_001) == nil)
        #expect(cache.count == 1)
        cache.insert("a.b.c", claims: Self.claims)
        #expect(cache.claims(for: "a.b.c", now: 1_900_000_001) == nil)
        #expect(cache.count == 1)
    }
}
