import AuthGateTestSupport
import Foundation
import RedisBridge
import Synchronization
import Testing

@testable import AuthGateCore

/// Issue 14: a sign-in's writes are one atomic commit, round trips are few, and a ban, a deletion
/// or a sign-out racing a write is never lost.
@Suite("Atomic account writes, memory and Redis stores", .timeLimit(.minutes(3)))
struct AtomicAccountTests: AccountsTesting {
    typealias StoreKind = TestStoreKind

    private func accessToken(_ service: AccountService, subject: String) async throws -> (IssuedSession, String) {
        let issued = try await service.signInWithIDToken(
            provider: "fake", idToken: idToken(subject: subject, email: "\(subject)@example.com"), rawNonce: nil, linkingTo: nil, now: Date())
        return (issued, issued.accessToken)
    }

    @Test("Redis round trips: sign-in 2 (lookup with the replay claim, commit) for a new and a returning user, refresh 1, GET /user 1")
    func roundTrips() async throws {
        try await withService(.redis) { service, store in
            let redis = try #require((store as? RedisAuthStore)?.redis)
            // Warm-up: every script loaded once (a first EVALSHA costs a NOSCRIPT and a SCRIPT LOAD).
            let (warm, warmToken) = try await accessToken(service, subject: "warm")
            _ = try await service.refresh(warm.refreshToken, now: Date())
            _ = try await service.profile(of: try await service.authenticate(bearer: warmToken, now: Date()))

            func count(_ body: () async throws -> Void) async throws -> Int {
                let before = redis.roundTrips
                try await body()
                return redis.roundTrips - before
            }
            var issued: IssuedSession?
            let newUser = try await count { issued = try await accessToken(service, subject: "rt-new").0 }
            let returning = try await count { _ = try await accessToken(service, subject: "rt-new") }
            let session = try #require(issued)
            let refresh = try await count { _ = try await service.refresh(session.refreshToken, now: Date()) }
            let getUser = try await count {
                _ = try await service.profile(of: try await service.authenticate(bearer: session.accessToken, now: Date()))
            }
            #expect(newUser == 2, "a new user's sign-in took \(newUser) round trips")
            #expect(returning == 2, "a returning user's sign-in took \(returning) round trips")
            #expect(refresh == 1, "a refresh took \(refresh) round trips")
            #expect(getUser == 1, "GET /user took \(getUser) round trips")
        }
    }

    @Test("a ban or a soft delete that lands after the caller was authenticated is not overwritten by its PUT /user", arguments: StoreKind.allCases)
    func writeAfterBan(kind: StoreKind) async throws {
        try await withService(kind) { service, store in
            let admin = AdminService(store: store, logger: accountsTestLogger)
            for soft in [false, true] {
                let subject = soft ? "late-delete" : "late-ban"
                let (issued, token) = try await accessToken(service, subject: subject)
                let caller = try await service.authenticate(bearer: token, now: Date())
                if soft {
                    #expect(try await admin.deleteUser(issued.user.id, soft: true, now: Date()))
                } else {
                    _ = try await admin.ban(issued.user.id, until: Date().addingTimeInterval(3600), now: Date())
                }
                let refused = await code {
                    _ = try await service.updateMetadata(of: caller, data: ["nickname": "late"], limit: 65_536, now: Date())
                }
                #expect(refused == .sessionNotFound, "the ban ended the caller's session")
                let stored = try #require(try await store.user(id: issued.user.id))
                #expect(stored.userMetadata["nickname"] == nil)
                if soft {
                    #expect(stored.deletedAt != nil && stored.email == nil)
                } else {
                    #expect(stored.bannedUntil != nil)
                }
                let again = await code { _ = try await accessToken(service, subject: subject) }
                #expect(again == (soft ? nil : .userBanned), "a soft-deleted user's identity signs in as a new user; a banned one is refused")
            }
        }
    }

    @Test("2,000 PUT /user racing a ban and a soft delete: the ban and the deletion always survive", arguments: StoreKind.allCases)
    func putRacingBan(kind: StoreKind) async throws {
        try await withService(kind) { service, store in
            let admin = AdminService(store: store, logger: accountsTestLogger)
            for soft in [false, true] {
                let (issued, token) = try await accessToken(service, subject: soft ? "race-delete" : "race-ban")
                let userID = issued.user.id
                let done = Counter()
                let written = Counter()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            for round in 0..<250 {
                                defer { done.add() }
                                do {
                                    let caller = try await service.authenticate(bearer: token, now: Date())
                                    _ = try await service.updateMetadata(
                                        of: caller, data: ["w\(worker)": .integer(Int64(round))], limit: 65_536, now: Date())
                                    written.add()
                                } catch let error as AuthGateError
                                    where [.userBanned, .sessionNotFound, .userNotFound].contains(error.code)
                                {
                                    continue
                                } catch let error as AuthGateError where error.code == .storeUnavailable {
                                    // Eight writers on one account: a PUT that lost 16 races in a
                                    // row answers 503 (nothing written); the client retries.
                                    continue
                                }
                            }
                        }
                    }
                    group.addTask {
                        // The ban lands while the writers are in full swing; the operator's fence
                        // holds them off, so it cannot be starved (an error here fails the test).
                        try await waitUntil("200 updates were made", deadline: .seconds(60)) { done.value >= 200 }
                        if soft {
                            _ = try await admin.deleteUser(userID, soft: true, now: Date())
                        } else {
                            _ = try await admin.ban(userID, until: Date().addingTimeInterval(3600), now: Date())
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(done.value == 2000)
                #expect(written.value >= 100, "the writers were running when the ban landed")
                let stored = try #require(try await store.user(id: userID))
                if soft {
                    #expect(stored.deletedAt != nil, "the soft delete survived every racing update")
                    #expect(try await store.identities(ofUser: userID).isEmpty)
                } else {
                    #expect(stored.bannedUntil != nil, "the ban survived every racing update")
                }
                #expect(try await store.sessions(ofUser: userID).isEmpty)
                await #expect(throws: AuthGateError.self) { _ = try await service.authenticate(bearer: token, now: Date()) }
            }
        }
    }

    @Test("a refused link changes nothing, and a link commits the identity, the email and the session at once", arguments: StoreKind.allCases)
    func linkIsAtomic(kind: StoreKind) async throws {
        try await withService(kind) { service, store in
            let anonymous = try await service.signUpAnonymously(data: [:], now: Date())
            let caller = try await service.authenticate(bearer: anonymous.accessToken, now: Date())
            // Someone else holds the email: the link is refused and nothing of it is written.
            _ = try await accessToken(service, subject: "holder")
            let taken = await code {
                _ = try await service.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "upgrade", email: "holder@example.com"), rawNonce: nil, linkingTo: caller,
                    now: Date())
            }
            #expect(taken == .emailExists)
            #expect(try await store.owner(ofIdentity: "fake", subject: "upgrade") == nil)
            #expect(try await store.identities(ofUser: anonymous.user.id).isEmpty)

            // An identity held by another user is refused as such, before the email rules (an
            // unverified email here), as GoTrue orders its checks.
            let held = await code {
                _ = try await service.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "holder", email: "other@example.com", verified: false), rawNonce: nil,
                    linkingTo: caller, now: Date())
            }
            #expect(held == .identityAlreadyExists)

            let linked = try await service.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "upgrade", email: "upgrade@example.com"), rawNonce: nil, linkingTo: caller,
                now: Date())
            #expect(linked.user.id == anonymous.user.id && !linked.user.isAnonymous)
            #expect(try await store.owner(ofIdentity: "fake", subject: "upgrade") == anonymous.user.id)
            #expect(try await store.owner(ofEmail: "upgrade@example.com") == anonymous.user.id)
            #expect(try await store.session(userID: anonymous.user.id, sessionID: linked.session.id) != nil)
            #expect(try await store.owner(ofSession: linked.session.id) == anonymous.user.id)
        }
    }

    @Test("a verified bearer token is remembered, and forgotten when the signing keys change")
    func verifiedTokensForgottenOnKeyChange() async throws {
        let configuration = try AuthGateConfiguration.parse(yaml: "", baseDirectory: "", environment: [:])
        let keys = SigningKeys(try SigningKeyRing.load(configuration.tokens, allowGenerated: true))
        try await withService(.memory, keys: keys) { service, _ in
            let (_, token) = try await accessToken(service, subject: "cached")
            _ = try await service.authenticate(bearer: token, now: Date())
            _ = try await service.authenticate(bearer: token, now: Date())  // from the cache
            keys.replace(with: try SigningKeyRing.load(configuration.tokens, allowGenerated: true))  // a new key; the old one is gone
            let refused = await code { _ = try await service.authenticate(bearer: token, now: Date()) }
            #expect(refused == .badJWT, "a token of a removed key is refused at once, cached or not")
        }
    }

    @Test(
        "a minted token is remembered as verified, with the claims verification reads from it; not one that verification refuses",
        arguments: [TestStoreKind.memory, .redis])
    func mintedTokensRemembered(_ kind: TestStoreKind) async throws {
        try await withService(kind) { service, _ in
            let now = Date()
            let (issued, token) = try await accessToken(service, subject: "minted")
            let remembered = try #require(service.verifiedTokens.claims(for: token, now: Int64(now.timeIntervalSince1970)))
            #expect(remembered == (try service.accessTokens.verify(token, now: now)))
            #expect(!remembered.userMetadata.isEmpty, "the provider's claims travel in user_metadata")
            let refreshed = try await service.refresh(issued.refreshToken, now: now)
            #expect(service.verifiedTokens.claims(for: refreshed.accessToken, now: Int64(now.timeIntervalSince1970)) != nil)

            // A user whose stored aud is not the configured audience: the token minted for it is
            // refused by verification, so it must not be remembered as verified either.
            var stray = issued.user
            stray.aud = "another-audience"
            let (session, refreshToken) = try service.newSession(
                for: stray.id, method: "oauth", device: SessionDevice(userAgent: nil, ip: nil), now: now)
            let strayToken = try service.issue(for: stray, identities: [], session: session, refreshToken: refreshToken, now: now).accessToken
            #expect(service.verifiedTokens.claims(for: strayToken, now: Int64(now.timeIntervalSince1970)) == nil)
            let refused = await code { _ = try await service.authenticate(bearer: strayToken, now: now) }
            #expect(refused == .badJWT)
        }
    }

    @Test(
        "a sign-in's answer shows the user and identities a later read gives, timestamps included (stores keep milliseconds)",
        arguments: [TestStoreKind.memory, .redis])
    func answersMatchLaterReads(_ kind: TestStoreKind) async throws {
        try await withService(kind) { service, store in
            // A `now` between two milliseconds, as Date() nearly always is.
            let millisecond = Date().atStoredMillisecond
            let now = millisecond.addingTimeInterval(0.000_456_7)
            func readBack(_ issued: IssuedSession) async throws -> AccountSnapshot {
                try #require(try await store.account(userID: issued.user.id, sessionID: issued.session.id))
            }
            for round in 0..<2 {  // a new user, then the same user returning
                let issued = try await service.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "stamped", email: "stamped@example.com"), rawNonce: nil, linkingTo: nil,
                    now: now.addingTimeInterval(Double(round)))
                let read = try await readBack(issued)
                #expect(issued.user == read.user, "round \(round)")
                #expect(issued.identities == read.identities, "round \(round)")
                #expect(issued.user.lastSignInAt == millisecond.addingTimeInterval(Double(round)).atStoredMillisecond)
            }
            let anonymous = try await service.signUpAnonymously(data: [:], now: now)
            #expect(anonymous.user == (try await readBack(anonymous)).user)
            let caller = try await service.authenticate(bearer: anonymous.accessToken, now: now)
            let (updated, _) = try await service.updateMetadata(of: caller, data: ["k": .string("v")], limit: 4096, now: now)
            #expect(updated == (try await readBack(anonymous)).user)
        }
    }

    @Test("stored records written by the Codable encoder of earlier versions still read back")
    func earlierRecordsRead() throws {
        let user = try StoredRecordCoding.decodeUser(
            Array(
                #"{"id":"u","aud":"authenticated","role":"authenticated","appMetadata":{},"userMetadata":{"a":1},"isAnonymous":false,"#
                    .utf8)
                + Array(#""createdAt":1790000000123.456,"updatedAt":1790000000123,"bannedUntil":1790000360000}"#.utf8))
        #expect(user.userMetadata["a"] == .integer(1) && user.bannedUntil == Date(timeIntervalSince1970: 1_790_000_360))
        #expect(abs(user.createdAt.timeIntervalSince1970 - 1_790_000_000.123456) < 0.000_001)
        #expect(try StoredRecordCoding.decodeUser(StoredRecordCoding.encode(user)) == Self.rounded(user))
        #expect(throws: AuthGateError.self) { try StoredRecordCoding.decodeUser(Array(#"{"id":"u"}"#.utf8)) }
        #expect(throws: AuthGateError.self) {
            try StoredRecordCoding.decodeUser(
                Array(#"{"id":"u","aud":"a","role":"r","appMetadata":{},"userMetadata":{},"#.utf8)
                    + Array(#""isAnonymous":false,"createdAt":1e300,"updatedAt":0}"#.utf8))
        }
    }

    @Test("a record as the cache is seeded with (asRead) is the record its stored bytes read back as, every date included")
    func asReadIsTheReadBack() throws {
        // Dates between milliseconds, each one different, so a date left unrounded or taken
        // from another member shows.
        func date(_ offset: Double) -> Date { Date(timeIntervalSince1970: 1_790_000_000.123_456 + offset) }
        for present in [true, false] {
            let user = UserRecord(
                id: "u", aud: "authenticated", role: "authenticated", email: present ? "a@example.com" : nil, phone: nil,
                emailConfirmedAt: present ? date(1.000_7) : nil, appMetadata: ["provider": "apple"], userMetadata: ["é": "ü"],
                isAnonymous: !present, createdAt: date(2.000_3), updatedAt: date(3.000_9), lastSignInAt: present ? date(4.000_2) : nil,
                bannedUntil: present ? date(5.000_6) : nil, deletedAt: present ? date(6.000_4) : nil)
            #expect(try StoredRecordCoding.decodeUser(StoredRecordCoding.encode(user)) == StoredRecordCoding.asRead(user))
            let identity = IdentityRecord(
                identityID: "i", userID: "u", provider: "apple", subject: "s", identityData: ["sub": "s"], email: nil,
                createdAt: date(7.000_1), updatedAt: date(8.000_8), lastSignInAt: present ? date(9.000_5) : nil)
            #expect(try StoredRecordCoding.decodeIdentity(StoredRecordCoding.encode(identity)) == StoredRecordCoding.asRead(identity))
            let session = SessionRecord(
                id: "s", userID: "u", createdAt: date(10.000_3), refreshedAt: date(11.000_7), aal: "aal1",
                amr: [.init(method: "id_token", timestamp: 1_790_000_010)])
            #expect(try StoredRecordCoding.decodeSession(StoredRecordCoding.encode(session)) == StoredRecordCoding.asRead(session))
            #expect(StoredRecordCoding.asRead(user) != user)
        }
    }

    /// A count shared by concurrent tasks.
    private final class Counter: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        func add() { count.wrappingAdd(1, ordering: .relaxed) }
    }

    /// `user` as it reads back: dates to the millisecond.
    private static func rounded(_ user: UserRecord) -> UserRecord {
        var copy = user
        func ms(_ date: Date) -> Date { Date(timeIntervalSince1970: Double(date.unixMilliseconds) / 1000) }
        copy.createdAt = ms(user.createdAt)
        copy.updatedAt = ms(user.updatedAt)
        copy.bannedUntil = user.bannedUntil.map(ms)
        return copy
    }
}
