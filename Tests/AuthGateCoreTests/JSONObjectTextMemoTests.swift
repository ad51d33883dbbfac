import Foundation
import Testing

@testable import AuthGateCore

/// Metadata objects written once per sign-in: a kept text serves only the very same dictionary.
@Suite("JSON object text memo")
struct JSONObjectTextMemoTests {
    private static let claims: [String: JSONValue] = [
        "iss": "https://appleid.apple.com", "sub": "001234.abcd", "provider_id": "001234.abcd", "email": "ann@example.com",
        "email_verified": true, "phone_verified": false, "custom_claims": .object(["is_private_email": true, "b": .array([1, "x"])])
    ]

    @Test("the text is JSONValue's own, appended after what the output holds; the same dictionary again is copied from the memo")
    func keptForTheSameDictionary() {
        let memo = JSONObjectTextMemo(capacity: 4)
        #expect(memo.keptText(Self.claims) == nil)
        var output = Array("{\"a\":".utf8)
        memo.write(Self.claims, into: &output)
        #expect(output == Array("{\"a\":".utf8) + JSONValue.object(Self.claims).serialized())
        let copy = Self.claims
        #expect(JSONObjectTextMemo.sharesStorage(copy, Self.claims))
        #expect(memo.keptText(copy) == JSONValue.object(Self.claims).serialized())
        #expect(memo.text(copy) == JSONValue.object(Self.claims).serialized())
    }

    @Test("equal but respelled members (Swift's == holds, the bytes differ) are written anew, in their own bytes")
    func respellingIsWrittenAnew() {
        let memo = JSONObjectTextMemo(capacity: 4)
        // U+00E9 is canonically equivalent to e + U+0301.
        let before: [String: JSONValue] = ["name": "Ren\u{E9}", "sub": "1"]
        let after: [String: JSONValue] = ["name": "Rene\u{301}", "sub": "1"]
        #expect(before == after)
        _ = memo.text(before)
        #expect(memo.keptText(before) != nil)
        #expect(memo.keptText(after) == nil)
        #expect(memo.text(after) == Array("{\"name\":\"Rene\u{301}\",\"sub\":\"1\"}".utf8))
        #expect(memo.text(before) == Array("{\"name\":\"Ren\u{E9}\",\"sub\":\"1\"}".utf8))
    }

    @Test("a changed dictionary, one pushed out of the ring, a large one and capacity 0 are all written anew, correctly")
    func changesAndLimits() {
        let memo = JSONObjectTextMemo(capacity: 2)
        var metadata = Self.claims
        _ = memo.text(metadata)
        // Changed in place after being kept: a new storage, written anew.
        metadata["email"] = "bob@example.com"
        #expect(memo.keptText(metadata) == nil)
        #expect(memo.text(metadata) == JSONValue.object(metadata).serialized())
        #expect(memo.keptText(Self.claims) != nil)
        for index in 0..<5 {
            let other: [String: JSONValue] = ["index": .integer(Int64(index)), "z": .null]
            #expect(memo.text(other) == JSONValue.object(other).serialized())
        }
        #expect(memo.keptText(Self.claims) == nil)
        #expect(memo.text(Self.claims) == JSONValue.object(Self.claims).serialized())
        let large: [String: JSONValue] = ["bio": .string(String(repeating: "\"", count: JSONObjectTextMemo.largestKept)), "a": 1]
        #expect(memo.text(large) == JSONValue.object(large).serialized())
        #expect(memo.keptText(large) == nil)
        let single: [String: JSONValue] = ["a": 1]
        #expect(memo.text(single) == Array("{\"a\":1}".utf8))
        #expect(memo.keptText(single) == nil)
        #expect(memo.text([:]) == Array("{}".utf8))
        let none = JSONObjectTextMemo(capacity: 0)
        #expect(none.text(Self.claims) == JSONValue.object(Self.claims).serialized())
        #expect(none.keptText(Self.claims) == nil)
    }

    @Test("many tasks writing many dictionaries at once each get their own dictionary's text")
    func concurrentWriters() async {
        let memo = JSONObjectTextMemo(capacity: 4)
        await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var allRight = true
                    for index in 0..<200 {
                        let members: [String: JSONValue] = ["task": .integer(Int64(task)), "index": .integer(Int64(index % 7))]
                        allRight = allRight && memo.text(members) == JSONValue.object(members).serialized()
                        allRight = allRight && memo.text(members) == JSONValue.object(members).serialized()
                    }
                    return allRight
                }
            }
            for await allRight in group { #expect(allRight) }
        }
    }

    @Test("a new user's user_metadata is its identity's identity_data itself, so the two are written once")
    func newUserMetadataSharesIdentityData() {
        let merged = AccountService.merged([:], with: Self.claims)
        #expect(JSONObjectTextMemo.sharesStorage(merged, Self.claims))
        let deleting = AccountService.merged([:], with: ["a": 1, "b": .null])
        #expect(deleting == ["a": 1])
        #expect(AccountService.merged(["a": 1, "b": 2], with: ["b": .null, "c": 3]) == ["a": 1, "c": 3])
    }
}
