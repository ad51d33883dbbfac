import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

@testable import AuthGateCore

/// Operator actions on users and sessions, on both stores: what they change and what they put
/// on the revocation stream.
@Suite("Admin service, memory and Redis stores", .serialized, .timeLimit(.minutes(3)))
struct AdminServiceTests {
    private let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// A user with an identity, an email and `sessions` sessions, written straight to the store.
    private func seed(_ store: any AuthStore, subject: String, email: String, sessions: Int, createdAt: Date) async throws -> (UserRecord, [String]) {
        let user = UserRecord(
            id: UUIDBytes.random(), aud: "authenticated", role: "authenticated", email: email, phone: nil, emailConfirmedAt: createdAt,
            appMetadata: ["provider": "google", "providers": .array(["google"])], userMetadata: [:], isAnonymous: false,
            createdAt: createdAt, updatedAt: createdAt, lastSignInAt: createdAt, bannedUntil: nil
        )
        var change = AccountChange(base: nil, user: user)
        change.claimedEmail = email
        change.claimedIdentities = [IdentityKey(provider: "google", subject: subject)]
        change.savedIdentities = [
            IdentityRecord(
                identityID: UUIDBytes.random(), userID: user.id, provider: "google", subject: subject, identityData: [:], email: email,
                createdAt: createdAt, updatedAt: createdAt, lastSignInAt: createdAt)
        ]
        #expect(try await store.commit(change) == .committed(endedSessions: []))
        var ids: [String] = []
        for _ in 0..<sessions {
            let session = SessionRecord(id: UUIDBytes.random(), userID: user.id, createdAt: createdAt, refreshedAt: createdAt, aal: "aal1", amr: [])
            try await store.createSession(session, refreshTokenHash: UUIDBytes.random())
            ids.append(session.id)
        }
        return (user, ids)
    }

    private func service(_ store: any AuthStore) -> AdminService {
        AdminService(store: store, logger: Logger(label: "admin-test"))
    }

    /// Every revocation the store published, as replicas read them: the memory store's list, or
    /// the Redis stream's entries decoded as the revocation feed decodes them.
    static func revocationEvents(_ store: any AuthStore) async throws -> [RevocationEvent] {
        if let memory = store as? MemoryAuthStore { return await memory.revocations }
        let redis = try #require(store as? RedisAuthStore, "a store that is neither memory nor Redis")
        let reply = try await redis.redis.send(RedisCommand("XRANGE", .string(redis.keys.revocations), .string("-"), .string("+")))
        return try RedisStreamEntry.entries(from: reply).compactMap(RevocationFeed.event(from:))
    }

    @Test("users list in creation order with paging; find by id, provider:subject and email", arguments: TestStoreKind.allCases)
    func listAndFind(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let admin = service(store)
            var seeded: [UserRecord] = []
            for index in 0..<5 {
                seeded.append(
                    try await seed(
                        store, subject: "s\(index)", email: "u\(index)@example.com", sessions: 0, createdAt: now.addingTimeInterval(Double(index))
                    ).0)
            }
            let first = try await admin.users(offset: 0, limit: 2)
            #expect(first.total == 5)
            #expect(first.users.map(\.id) == seeded.prefix(2).map(\.id))
            #expect(try await admin.users(offset: 4, limit: 2).users.map(\.id) == [seeded[4].id])
            #expect(try await admin.users(offset: 5, limit: 2).users.isEmpty)
            #expect(try await admin.findUser(seeded[1].id.uppercased())?.id == seeded[1].id)
            #expect(try await admin.findUser("google:s2")?.id == seeded[2].id)
            #expect(try await admin.findUser("U3@example.com")?.id == seeded[3].id)
            #expect(try await admin.findUser("google:nobody") == nil)
        }
    }

    @Test(
        "revoking a session by its id alone ends it and streams it; sign-out everywhere ends the rest and voids the user's tokens",
        arguments: TestStoreKind.allCases)
    func sessions(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let admin = service(store)
            let (user, ids) = try await seed(store, subject: "a", email: "a@example.com", sessions: 3, createdAt: now)
            let (other, otherIDs) = try await seed(store, subject: "b", email: "b@example.com", sessions: 1, createdAt: now)
            #expect(try await admin.revokeSession(ids[0], now: now) == user.id)
            #expect(try await admin.revokeSession(ids[0], now: now) == nil, "a session ends once")
            #expect(try await admin.sessions(of: user.id).map(\.id).sorted() == Array(ids.dropFirst()).sorted())
            #expect(try await admin.signOutEverywhere(user.id, now: now).sorted() == Array(ids.dropFirst()).sorted())
            #expect(try await admin.sessions(of: user.id).isEmpty)
            #expect(try await admin.sessions(of: other.id).map(\.id) == otherIDs)
            let events = try await Self.revocationEvents(store)
            #expect(events.filter { $0.kind == .session }.compactMap(\.sessionID).sorted() == ids.sorted())
            #expect(events.contains { $0.kind == .user && $0.userID == user.id && $0.at == now })
            #expect(!events.contains { $0.userID == other.id })
        }
    }

    @Test(
        "ban ends the sessions and refuses sign-in until lifted; delete removes the user and its indexes, soft delete keeps a scrubbed record",
        arguments: TestStoreKind.allCases)
    func banAndDelete(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let admin = service(store)
            let (user, _) = try await seed(store, subject: "c", email: "c@example.com", sessions: 2, createdAt: now)
            let banned = try #require(try await admin.ban(user.id, until: now.addingTimeInterval(3600), now: now))
            #expect(banned.isBanned(at: now) && !banned.isBanned(at: now.addingTimeInterval(3601)))
            #expect(try await admin.sessions(of: user.id).isEmpty)
            #expect(try await admin.liftBan(user.id, now: now)?.isBanned(at: now) == false)

            #expect(try await admin.deleteUser(user.id, soft: false, now: now))
            #expect(try await store.user(id: user.id) == nil)
            #expect(try await store.owner(ofEmail: "c@example.com") == nil)
            #expect(try await store.owner(ofIdentity: "google", subject: "c") == nil)
            #expect(try await admin.users(offset: 0, limit: 10).total == 0)
            #expect(try await admin.deleteUser(user.id, soft: false, now: now) == false)

            let (kept, _) = try await seed(store, subject: "d", email: "d@example.com", sessions: 1, createdAt: now)
            #expect(try await admin.deleteUser(kept.id, soft: true, now: now))
            let scrubbed = try #require(try await store.user(id: kept.id))
            #expect(scrubbed.email == nil && scrubbed.deletedAt == now && scrubbed.isBanned(at: now.addingTimeInterval(1e9)))
            #expect(try await store.identities(ofUser: kept.id).isEmpty)
            #expect(try await store.owner(ofIdentity: "google", subject: "d") == nil, "the identity can sign in as a new user")
            #expect(try await admin.sessions(of: kept.id).isEmpty)
        }
    }

    @Test(
        "an operator's change, ban and lifted ban answer with the user every later read gives (dates at the stored millisecond)",
        arguments: TestStoreKind.allCases)
    func answersMatchLaterReads(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let admin = service(store)
            // Between two milliseconds, as Date() nearly always is.
            let now = now.addingTimeInterval(0.000_456_7)
            let (user, _) = try await seed(store, subject: "e", email: "e@example.com", sessions: 1, createdAt: self.now)
            let changed = try #require(try await admin.updateUser(user.id, now: now) { $0.appMetadata["plan"] = "pro" })
            #expect(changed == (try await store.user(id: user.id)))
            let banned = try #require(try await admin.ban(user.id, until: now.addingTimeInterval(3600), now: now))
            #expect(banned == (try await store.user(id: user.id)))
            #expect(banned.bannedUntil == self.now.addingTimeInterval(3600))
            let lifted = try #require(try await admin.liftBan(user.id, now: now))
            #expect(lifted == (try await store.user(id: user.id)))
            #expect(lifted.updatedAt == self.now)
        }
    }
}
