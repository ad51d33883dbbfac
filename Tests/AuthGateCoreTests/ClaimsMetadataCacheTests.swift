import Foundation
import Testing

@testable import AuthGateCore

/// Users' metadata text kept for the next token: reused only for the very same dictionaries.
@Suite("Claims metadata text")
struct ClaimsMetadataCacheTests {
    private static func user(id: String = "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a11", app: [String: JSONValue], user: [String: JSONValue]) -> UserRecord {
        UserRecord(
            id: id, aud: "authenticated", role: "authenticated", email: nil, phone: nil, emailConfirmedAt: nil, appMetadata: app,
            userMetadata: user, isAnonymous: false, createdAt: Date(timeIntervalSince1970: 1_900_000_000),
            updatedAt: Date(timeIntervalSince1970: 1_900_000_000), lastSignInAt: nil, bannedUntil: nil)
    }

    @Test("the text is the metadata's own JSON; the same record again gets the kept text, not a second writing")
    func keptForTheSameRecord() {
        let cache = ClaimsMetadataCache(capacity: 4)
        let record = Self.user(app: ["providers": .array(["apple"]), "provider": "apple"], user: ["name": "Ann", "b": 1])
        let first = cache.text(for: record)
        #expect(first.appMetadata == JSONValue.object(record.appMetadata).serialized())
        #expect(first.userMetadata == JSONValue.object(record.userMetadata).serialized())
        let again = cache.text(for: record)
        #expect(again.appMetadata.withUnsafeBufferPointer(\.baseAddress) == first.appMetadata.withUnsafeBufferPointer(\.baseAddress))
        #expect(cache.count == 1)
    }

    @Test("equal but respelled metadata (Swift's == holds, the bytes differ) is written anew, in its own bytes")
    func respellingIsWrittenAnew() {
        let cache = ClaimsMetadataCache(capacity: 4)
        // U+212A KELVIN SIGN and U+00E9 are canonically equivalent to K and e + U+0301.
        let before = Self.user(app: ["role": "\u{212A}ey"], user: ["name": "Ren\u{E9}"])
        let after = Self.user(app: ["role": "Key"], user: ["name": "Rene\u{301}"])
        #expect(before.appMetadata == after.appMetadata && before.userMetadata == after.userMetadata)
        _ = cache.text(for: before)
        let text = cache.text(for: after)
        #expect(text.appMetadata == Array("{\"role\":\"Key\"}".utf8))
        #expect(text.userMetadata == Array("{\"name\":\"Rene\u{301}\"}".utf8))
    }

    @Test("a changed dictionary is written anew; users are kept apart; large metadata is not kept")
    func changesAndLimits() {
        let cache = ClaimsMetadataCache(capacity: 4)
        var record = Self.user(app: ["provider": "apple"], user: [:])
        _ = cache.text(for: record)
        record.userMetadata["theme"] = "dark"
        #expect(cache.text(for: record).userMetadata == Array("{\"theme\":\"dark\"}".utf8))
        let other = Self.user(id: "9e1f0000-0000-4000-8000-000000000001", app: ["provider": "google"], user: [:])
        #expect(cache.text(for: other).appMetadata == Array("{\"provider\":\"google\"}".utf8))
        #expect(cache.count == 2)
        let large = Self.user(
            id: "9e1f0000-0000-4000-8000-000000000002", app: [:],
            user: ["bio": .string(String(repeating: "x", count: ClaimsMetadataCache.largestCached))])
        #expect(cache.text(for: large).userMetadata.count > ClaimsMetadataCache.largestCached)
        #expect(cache.count == 2)
    }

    @Test("claims written with the kept text are the bytes written without it")
    func claimsAgree() {
        let cache = ClaimsMetadataCache(capacity: 4)
        let record = Self.user(app: ["providers": .array(["apple", "google"]), "z": .null], user: ["nested": .object(["b": 1, "a": true])])
        let claims = AccessTokenClaims(
            iss: "https://auth.example.com/auth/v1", sub: record.id, aud: "authenticated", exp: 2_000_000_000, iat: 1_900_000_000,
            email: "", phone: "", appMetadata: record.appMetadata, userMetadata: record.userMetadata, role: "authenticated", aal: "aal1",
            amr: [.init(method: "id_token", timestamp: 1_900_000_000)], sessionID: "9e1f0000-0000-4000-8000-000000000003", isAnonymous: false)
        #expect(claims.serialized(metadata: cache.text(for: record)) == claims.serialized())
        #expect(claims.serialized(metadata: cache.text(for: record)) == claims.serialized())
    }
}
