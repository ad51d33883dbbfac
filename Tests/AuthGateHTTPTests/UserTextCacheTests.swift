import Foundation
import Testing

@testable import AuthGateCore
@testable import AuthGateHTTP

/// A kept user's text is reused only for the very user and identities it was written from: any
/// change a store can make (a ban, a deletion, new metadata, a sign-in, an identity linked,
/// changed or unlinked) gets a fresh rendering.
@Suite("Users' JSON text kept")
struct UserTextCacheTests {
    private static func address(_ bytes: [UInt8]) -> UnsafeRawPointer? {
        bytes.withUnsafeBytes { $0.baseAddress }
    }

    @Test("the same user and identities reuse the kept text")
    func reused() {
        let cache = UserTextCache(capacity: 10)
        for (user, identities) in GoTrueJSONTests.users() {
            let first = cache.text(user, identities: identities)
            #expect(first == GoTrueJSON.userText(user, identities: identities))
            #expect(first.capacity <= UserTextCache.keptCapacity(first.count), "a kept text holds no spare capacity")
            // A copy, as a second read from the store gives: equal values, shared storage.
            let (again, againIdentities) = (user, identities)
            let second = cache.text(again, identities: againIdentities)
            #expect(second == first)
            #expect(Self.address(second) == Self.address(first))
        }
        #expect(cache.count == 1)
    }

    @Test("every change to the user or its identities is rendered afresh")
    func changes() {
        let (user, identities) = GoTrueJSONTests.users()[1]
        let at = GoTrueJSONTests.at
        var changes: [(String, UserRecord, [IdentityRecord])] = []
        func changed(_ name: String, _ edit: (inout UserRecord) -> Void) {
            var copy = user
            edit(&copy)
            changes.append((name, copy, identities))
        }
        changed("banned") { $0.bannedUntil = at.addingTimeInterval(3600) }
        changed("unbanned") { $0.bannedUntil = nil }
        changed("deleted") { $0.deletedAt = at.addingTimeInterval(60) }
        changed("signed in") { $0.lastSignInAt = at.addingTimeInterval(0.001) }
        changed("user metadata") { $0.userMetadata["nested"] = .object(["b": 2]) }
        changed("app metadata") { $0.appMetadata["providers"] = .array(["apple"]) }
        changed("email") { $0.email = "other@example.com" }
        changed("anonymous flag") { $0.isAnonymous = true }
        var signedIn = identities
        signedIn[0].lastSignInAt = at.addingTimeInterval(7)
        changes.append(("identity signed in", user, signedIn))
        var data = identities
        data[1].identityData["name"] = "Jane"
        changes.append(("identity data", user, data))
        changes.append(("identity unlinked", user, Array(identities.prefix(1))))
        changes.append(("identity linked", user, identities + [GoTrueJSONTests.identity("github", email: nil, lastSignIn: nil)]))

        for (name, changedUser, changedIdentities) in changes {
            let cache = UserTextCache(capacity: 10)
            let kept = cache.text(user, identities: identities)
            let text = cache.text(changedUser, identities: changedIdentities)
            #expect(text == GoTrueJSON.userText(changedUser, identities: changedIdentities), "\(name)")
            #expect(text != kept, "\(name)")
            // And the change is what is kept now.
            #expect(Self.address(cache.text(changedUser, identities: changedIdentities)) == Self.address(text), "\(name)")
        }
    }

    @Test("bounded: the oldest user goes first; capacity 0 and large texts keep nothing")
    func bounded() {
        let (user, identities) = GoTrueJSONTests.users()[0]
        let cache = UserTextCache(capacity: 3)
        for index in 0..<5 {
            var other = user
            other.id = "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a1\(index)"
            #expect(cache.text(other, identities: identities) == GoTrueJSON.userText(other, identities: identities))
        }
        #expect(cache.count == 3)

        let none = UserTextCache(capacity: 0)
        _ = none.text(user, identities: identities)
        #expect(none.count == 0)

        var large = user
        large.userMetadata = ["bio": .string(String(repeating: "x", count: UserTextCache.largestCached))]
        let kept = UserTextCache(capacity: 3)
        #expect(kept.text(large, identities: identities) == GoTrueJSON.userText(large, identities: identities))
        #expect(kept.count == 0)
    }
}
