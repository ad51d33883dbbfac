import AuthGateTestSupport
import Foundation
import Testing

@testable import AuthGateCore

/// Keys that name accounts (provider subjects, email addresses) are compared byte for byte on
/// every store, as Redis compares them; Swift's `==` on strings is Unicode canonical equivalence.
@Suite("Byte-exact account keys", .timeLimit(.minutes(2)))
struct ByteExactKeyTests {
    /// Canonically equivalent to "K7" / "zoë@example.com" under Swift's `==`, different bytes.
    static let kelvin = "\u{212A}7"
    static let decomposed = "zoe\u{308}@example.com"

    @Test("identity keys and byte-exact strings differ where Swift's string equality does not")
    func keys() {
        #expect("K7" == Self.kelvin, "the trap: Swift calls these equal")
        #expect(IdentityKey(provider: "oidc", subject: "K7") != IdentityKey(provider: "oidc", subject: Self.kelvin))
        #expect(Set([IdentityKey(provider: "oidc", subject: "K7"), IdentityKey(provider: "oidc", subject: Self.kelvin)]).count == 2)
        #expect(ByteExactString("zoë@example.com") != ByteExactString(Self.decomposed))
        #expect(IdentityKey(provider: "oidc", subject: "K7") == IdentityKey(provider: "oidc", subject: "K7"))
    }

    @Test("two users whose subjects and addresses are canonically equivalent stay two users", arguments: TestStoreKind.allCases)
    func lookAlikesAreDistinct(_ kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            func change(subject: String, email: String) -> AccountChange {
                let user = UserRecord(
                    id: UUIDBytes.random(), aud: "authenticated", role: "authenticated", email: email, phone: nil, emailConfirmedAt: now,
                    appMetadata: [:], userMetadata: [:], isAnonymous: false, createdAt: now, updatedAt: now, lastSignInAt: now, bannedUntil: nil)
                var change = AccountChange(base: nil, user: user)
                change.savedIdentities = [
                    IdentityRecord(
                        identityID: UUIDBytes.random(), userID: user.id, provider: "oidc", subject: subject, identityData: [:], email: email,
                        createdAt: now, updatedAt: now, lastSignInAt: now)
                ]
                change.claimedIdentities = [IdentityKey(provider: "oidc", subject: subject)]
                change.claimedEmail = email
                return change
            }
            let first = change(subject: "K7", email: "zoë@example.com")
            let second = change(subject: Self.kelvin, email: Self.decomposed)
            guard case .committed = try await store.commit(first), case .committed = try await store.commit(second) else {
                Issue.record("\(kind): a look-alike's commit was refused as taken")
                return
            }
            #expect(try await store.owner(ofIdentity: "oidc", subject: "K7") == first.user.id)
            #expect(try await store.owner(ofIdentity: "oidc", subject: Self.kelvin) == second.user.id)
            #expect(try await store.owner(ofEmail: "zoë@example.com") == first.user.id)
            #expect(try await store.owner(ofEmail: Self.decomposed) == second.user.id)
            let lookup = try await store.signInLookup(provider: "oidc", subject: Self.kelvin, email: nil, taking: nil)
            #expect(lookup.identityOwner == second.user.id)
        }
    }
}
