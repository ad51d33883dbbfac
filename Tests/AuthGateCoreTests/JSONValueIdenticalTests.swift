import Foundation
import Testing

@testable import AuthGateCore

/// Byte-for-byte sameness of JSON values, and the merges that keep a record's dictionary when a
/// sign-in changes nothing.
@Suite("JSON values identical byte for byte")
struct JSONValueIdenticalTests {
    @Test("identical means the same text: respelled strings and names, -0.0, and 1 against 1.0 differ though Swift's == may hold")
    func identical() {
        let pairs: [(JSONValue, JSONValue, Bool)] = [
            (.null, .null, true), (.bool(true), .bool(true), true), (.bool(true), .bool(false), false),
            (.integer(1), .integer(1), true), (.integer(1), .double(1), false), (.double(0.5), .double(0.5), true),
            (.double(0), .double(-0.0), false), (.string("Ren\u{E9}"), .string("Ren\u{E9}"), true),
            (.string("Ren\u{E9}"), .string("Rene\u{301}"), false), (.array([1, "a"]), .array([1, "a"]), true),
            (.array([1, "a"]), .array([1]), false), (.array(["Ren\u{E9}"]), .array(["Rene\u{301}"]), false),
            (.object(["a": 1, "b": .object(["c": true])]), .object(["b": .object(["c": true]), "a": 1]), true),
            (.object(["a": 1]), .object(["a": 1, "b": 2]), false), (.object(["Ren\u{E9}": 1]), .object(["Rene\u{301}": 1]), false),
            (.object(["a": .object(["b": "Ren\u{E9}"])]), .object(["a": .object(["b": "Rene\u{301}"])]), false), (.string("1"), .integer(1), false)
        ]
        for (a, b, expected) in pairs {
            #expect(a.isIdentical(to: b) == expected, "\(a) against \(b)")
            #expect(b.isIdentical(to: a) == expected, "\(b) against \(a)")
            if expected { #expect(a.serialized() == b.serialized()) } else { #expect(a.serialized() != b.serialized()) }
        }
        #expect(JSONValue.string("Ren\u{E9}") == JSONValue.string("Rene\u{301}"))
    }

    @Test("a merge that changes nothing byte for byte gives the base itself; any change, respelling or deletion gives a new object")
    func mergeKeepsTheBase() {
        let base: [String: JSONValue] = [
            "name": "Ren\u{E9}", "email": "r@example.com", "custom_claims": .object(["a": .array([1, 2])]), "theme": "dark"
        ]
        let same = AccountService.merged(base, with: ["name": "Ren\u{E9}", "custom_claims": .object(["a": .array([1, 2])]), "gone": .null])
        #expect(JSONObjectTextMemo.sharesStorage(same, base))
        let respelled = AccountService.merged(base, with: ["name": "Rene\u{301}"])
        #expect(!JSONObjectTextMemo.sharesStorage(respelled, base))
        #expect(JSONValue.object(respelled).serialized() == JSONValue.object(base.merging(["name": "Rene\u{301}"]) { $1 }).serialized())
        #expect(AccountService.merged(base, with: ["theme": .null]) == base.filter { $0.key != "theme" })
        #expect(AccountService.merged(base, with: ["new": 1]) == base.merging(["new": 1]) { $1 })
        let narrower: JSONValue = .object(["a": .array([1])])
        #expect(AccountService.merged(base, with: ["custom_claims": narrower])["custom_claims"] == narrower)
        #expect(AccountService.merged(base, with: [:]) == base)
    }

    @Test("app_metadata already naming the providers is kept as it is; a new provider makes a new object")
    func appMetadataKept() {
        let identity = IdentityRecord(
            identityID: "i1", userID: "u1", provider: "apple", subject: "s1", identityData: [:], email: nil,
            createdAt: .init(timeIntervalSince1970: 1),
            updatedAt: .init(timeIntervalSince1970: 1), lastSignInAt: nil, sealedRefreshToken: nil, refreshTokenClientID: nil)
        var google = identity
        google.provider = "google"
        google.createdAt = .init(timeIntervalSince1970: 2)
        let first = AccountService.appMetadata(["role": "x"], identities: [identity])
        #expect(first == ["role": "x", "provider": "apple", "providers": .array(["apple"])])
        #expect(JSONObjectTextMemo.sharesStorage(AccountService.appMetadata(first, identities: [identity]), first))
        let both = AccountService.appMetadata(first, identities: [google, identity])
        #expect(both == ["role": "x", "provider": "apple", "providers": .array(["apple", "google"])])
        #expect(!JSONObjectTextMemo.sharesStorage(both, first))
    }
}
