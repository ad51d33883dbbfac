import Foundation
import Testing

@testable import AuthGateCore
@testable import AuthGateHTTP

/// The answers written member by member give exactly the bytes of GoTrue's shapes as
/// ``GoTrueJSON`` defines them with dictionaries (sorted member names).
@Suite("GoTrue JSON written directly")
struct GoTrueJSONTests {
    static let at = Date(timeIntervalSince1970: 1_790_000_000.123)

    static func identity(_ provider: String, email: String?, lastSignIn: Date?) -> IdentityRecord {
        IdentityRecord(
            identityID: "9e1f0000-0000-4000-8000-00000000000\(provider.count % 10)", userID: "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a11",
            provider: provider, subject: "001234.\(provider)",
            identityData: ["sub": .string("001234.\(provider)"), "email": email.map(JSONValue.string) ?? .null, "quote\"": "\\\u{1}é"],
            email: email, createdAt: at, updatedAt: at.addingTimeInterval(5), lastSignInAt: lastSignIn)
    }

    /// A user with no optional member and no identity, and one with every member and two identities.
    static func users() -> [(UserRecord, [IdentityRecord])] {
        let plain = UserRecord(
            id: "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a11", aud: "authenticated", role: "authenticated", email: nil, phone: nil,
            emailConfirmedAt: nil, appMetadata: [:], userMetadata: [:], isAnonymous: true, createdAt: at, updatedAt: at, lastSignInAt: nil,
            bannedUntil: nil)
        var full = plain
        full.email = "jane@example.com"
        full.phone = "+15550100"
        full.emailConfirmedAt = at.addingTimeInterval(1)
        full.lastSignInAt = at.addingTimeInterval(2)
        full.bannedUntil = at.addingTimeInterval(3)
        full.deletedAt = at.addingTimeInterval(4)
        full.isAnonymous = false
        full.appMetadata = ["provider": "apple", "providers": .array(["apple", "google"])]
        full.userMetadata = ["nested": .object(["b": 1, "a": .array([true, .null, .double(2.5)])]), "ü": "x"]
        return [
            (plain, []),
            (full, [identity("apple", email: "jane@example.com", lastSignIn: at), identity("google", email: nil, lastSignIn: nil)])
        ]
    }

    @Test("a user with and without every optional member, with identities")
    func user() throws {
        for (user, identities) in Self.users() {
            let text = GoTrueJSON.userText(user, identities: identities)
            #expect(text == JSONValue.object(GoTrueJSON.user(user, identities: identities)).serialized())
            #expect(try JSONValue.parse(text) == .object(GoTrueJSON.user(user, identities: identities)))
        }
    }

    @Test("a token answer")
    func session() throws {
        for (user, identities) in Self.users() {
            let session = SessionRecord(
                id: "9e1f0000-0000-4000-8000-000000000001", userID: user.id, createdAt: Self.at, refreshedAt: Self.at, aal: "aal1", amr: [])
            let issued = IssuedSession(
                accessToken: "a.b.c", expiresIn: 3600, expiresAt: 1_790_003_600, refreshToken: "r", user: user, identities: identities,
                session: session)
            let expected = JSONValue.object(GoTrueJSON.session(issued)).serialized()
            #expect(GoTrueJSON.sessionText(issued, users: nil) == expected)
            #expect(GoTrueJSON.sessionText(issued, users: UserTextCache(capacity: 0)) == expected)
            // The user's text kept from an earlier answer gives the same bytes.
            let users = UserTextCache(capacity: 1)
            _ = users.text(user, identities: identities)
            #expect(GoTrueJSON.sessionText(issued, users: users) == expected)
        }
    }
}
