import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

@testable import AuthGateCore

/// The GoTrue flows on both stores: one conformance suite, so the memory and Redis stores keep
/// the same rules.
@Suite("Accounts and sessions on the memory and Redis stores", .serialized, .timeLimit(.minutes(3)))
struct AccountServiceTests: AccountsTesting {
    typealias StoreKind = TestStoreKind

    @Test("id_token sign-in creates a user once, then finds it; the access token carries GoTrue's claims", arguments: StoreKind.allCases)
    func signIn(kind: StoreKind) async throws {
        try await withService(kind) { accounts, _ in
            let first = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "s1", email: "Ann@Example.com"), rawNonce: nil, linkingTo: nil, now: Date())
            #expect(first.user.email == "ann@example.com")
            #expect(first.user.emailConfirmedAt != nil)
            #expect(first.user.appMetadata == ["provider": "fake", "providers": .array(["fake"])])
            #expect(first.identities.map(\.subject) == ["s1"])
            #expect(first.user.userMetadata["provider_id"] == "s1")
            // A new user's user_metadata is its identity's identity_data itself, whose text the
            // records and the token wrote once (JSONObjectTextMemo).
            #expect(JSONObjectTextMemo.sharesStorage(first.user.userMetadata, first.identities[0].identityData))
            #expect(JSONObjectTextMemo.shared.keptText(first.user.userMetadata) == JSONValue.object(first.user.userMetadata).serialized())
            let claims = try accounts.accessTokens.verify(first.accessToken, now: Date())
            #expect(claims.sub == first.user.id)
            #expect(claims.sessionID == first.session.id)
            #expect(claims.amr.map(\.method) == ["oauth"])
            #expect(claims.isAnonymous == false)
            let again = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "s1", email: "ann@example.com"), rawNonce: nil, linkingTo: nil, now: Date())
            #expect(again.user.id == first.user.id)
            #expect(again.session.id != first.session.id)
            // The same provider data again changes none of the three objects: the user as read
            // (from the record cache on Redis) keeps its very dictionaries, and the text kept
            // for them, instead of a rebuilt copy.
            #expect(JSONObjectTextMemo.sharesStorage(again.user.userMetadata, first.user.userMetadata))
            #expect(JSONObjectTextMemo.sharesStorage(again.user.appMetadata, first.user.appMetadata))
            #expect(JSONObjectTextMemo.sharesStorage(again.identities[0].identityData, first.identities[0].identityData))
            // Automatic linking by verified email: another provider subject with the same email joins the user.
            let linked = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "s2", email: "ann@example.com"), rawNonce: nil, linkingTo: nil, now: Date())
            #expect(linked.user.id == first.user.id)
            #expect(Set(linked.identities.map(\.subject)) == ["s1", "s2"])
            // An unverified email never links.
            let stranger = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "s3", email: "ann@example.com", verified: false), rawNonce: nil, linkingTo: nil,
                now: Date())
            #expect(stranger.user.id != first.user.id)
            #expect(stranger.user.email == nil)
        }
    }

    @Test("anonymous sign-up, then link_identity keeps the user id and makes it permanent", arguments: StoreKind.allCases)
    func anonymousUpgrade(kind: StoreKind) async throws {
        try await withService(kind) { accounts, _ in
            let anonymous = try await accounts.signUpAnonymously(data: ["theme": "dark"], now: Date())
            #expect(anonymous.user.isAnonymous)
            #expect(anonymous.user.appMetadata.isEmpty)
            #expect(try accounts.accessTokens.verify(anonymous.accessToken, now: Date()).isAnonymous)
            let caller = try await accounts.authenticate(bearer: anonymous.accessToken, now: Date())
            let upgraded = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "apple-1", email: "bo@example.com"), rawNonce: nil, linkingTo: caller, now: Date()
            )
            #expect(upgraded.user.id == anonymous.user.id)
            #expect(upgraded.user.isAnonymous == false)
            #expect(upgraded.user.email == "bo@example.com")
            #expect(upgraded.user.appMetadata["providers"] == .array(["fake"]))
            #expect(upgraded.user.userMetadata["theme"] == "dark")
            // The old anonymous session refreshes into a non-anonymous token.
            let refreshed = try await accounts.refresh(anonymous.refreshToken, now: Date())
            #expect(try accounts.accessTokens.verify(refreshed.accessToken, now: Date()).isAnonymous == false)
            // Linking an identity someone else owns changes nothing.
            let other = try await accounts.signUpAnonymously(data: [:], now: Date())
            let otherCaller = try await accounts.authenticate(bearer: other.accessToken, now: Date())
            #expect(
                await code {
                    _ = try await accounts.signInWithIDToken(
                        provider: "fake", idToken: idToken(subject: "apple-1"), rawNonce: nil, linkingTo: otherCaller, now: Date())
                } == .identityAlreadyExists
            )
            let unchanged = try await accounts.authenticate(bearer: other.accessToken, now: Date())
            #expect(unchanged.user.isAnonymous)
        }
    }

    @Test("refresh: rotation; the parent within 10 s returns the current child; after it the session dies", arguments: StoreKind.allCases)
    func refreshReuse(kind: StoreKind) async throws {
        try await withService(kind) { accounts, _ in
            let start = Date()
            let session = try await accounts.signUpAnonymously(data: [:], now: start)
            let child = try await accounts.refresh(session.refreshToken, now: start.addingTimeInterval(1))
            #expect(child.refreshToken != session.refreshToken)
            #expect(child.session.id == session.session.id)
            let sameChild = try await accounts.refresh(session.refreshToken, now: start.addingTimeInterval(9))
            #expect(sameChild.refreshToken == child.refreshToken)
            #expect(
                await code { _ = try await accounts.refresh(session.refreshToken, now: start.addingTimeInterval(12)) } == .refreshTokenAlreadyUsed)
            #expect(await code { _ = try await accounts.refresh(child.refreshToken, now: start.addingTimeInterval(13)) } == .refreshTokenNotFound)
            #expect(
                await code { _ = try await accounts.authenticate(bearer: child.accessToken, now: start.addingTimeInterval(13)) } == .sessionNotFound)
        }
    }

    @Test("refresh: a grandparent is reuse and revokes; garbage and foreign tokens are not found", arguments: StoreKind.allCases)
    func olderReuse(kind: StoreKind) async throws {
        try await withService(kind) { accounts, store in
            let start = Date()
            let first = try await accounts.signUpAnonymously(data: [:], now: start)
            let second = try await accounts.refresh(first.refreshToken, now: start.addingTimeInterval(1))
            let third = try await accounts.refresh(second.refreshToken, now: start.addingTimeInterval(2))
            #expect(await code { _ = try await accounts.refresh("x", now: start) } == .refreshTokenNotFound)
            let forged = RefreshToken.generate(userID: first.user.id, sessionID: first.session.id)?.value ?? ""
            #expect(await code { _ = try await accounts.refresh(forged, now: start.addingTimeInterval(3)) } == .refreshTokenNotFound)
            _ = try await accounts.refresh(third.refreshToken, now: start.addingTimeInterval(3))
            #expect(await code { _ = try await accounts.refresh(first.refreshToken, now: start.addingTimeInterval(4)) } == .refreshTokenAlreadyUsed)
            #expect(try await store.sessions(ofUser: first.user.id).isEmpty)
        }
    }

    @Test("100 concurrent refreshes with one token never create two valid children", arguments: StoreKind.allCases)
    func concurrentRefresh(kind: StoreKind) async throws {
        try await withService(kind) { accounts, _ in
            let session = try await accounts.signUpAnonymously(data: [:], now: Date())
            let tokens = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<100 { group.addTask { try? await accounts.refresh(session.refreshToken, now: Date()).refreshToken } }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(tokens.allSatisfy { $0 != nil })
            #expect(Set(tokens.compactMap { $0 }).count == 1)
            let child = try #require(tokens.first ?? nil)
            _ = try await accounts.refresh(child, now: Date())
        }
    }

    @Test("session timebox and inactivity timeout end sessions", arguments: StoreKind.allCases)
    func sessionLimits(kind: StoreKind) async throws {
        try await withService(kind, extra: ", session_timebox: 1h, inactivity_timeout: 10m") { accounts, _ in
            let start = Date()
            let idle = try await accounts.signUpAnonymously(data: [:], now: start)
            #expect(await code { _ = try await accounts.refresh(idle.refreshToken, now: start.addingTimeInterval(601)) } == .sessionExpired)
            let busy = try await accounts.signUpAnonymously(data: [:], now: start)
            var token = busy.refreshToken
            for minute in stride(from: 5, through: 55, by: 5) {
                token = try await accounts.refresh(token, now: start.addingTimeInterval(Double(minute * 60))).refreshToken
            }
            #expect(await code { _ = try await accounts.refresh(token, now: start.addingTimeInterval(3601)) } == .sessionExpired)
        }
    }

    /// Sessions never expire by default and every sign-in starts one: one user's sessions (and
    /// the answer of `GET /user/sessions`, and the work of deleting the user) grew without bound.
    @Test(
        "max_sessions_per_user: a sign-in past the limit ends the user's oldest sessions and announces them; linking counts too",
        arguments: StoreKind.allCases)
    func sessionsPerUser(kind: StoreKind) async throws {
        try await withService(kind, extra: ", max_sessions_per_user: 3") { accounts, store in
            let start = Date()
            var signIns: [IssuedSession] = []
            for index in 0..<5 {
                signIns.append(
                    try await accounts.signInWithIDToken(
                        provider: "fake", idToken: idToken(subject: "many"), rawNonce: nil, linkingTo: nil,
                        now: start.addingTimeInterval(Double(index))))
            }
            let userID = signIns[0].user.id
            #expect(try await store.sessions(ofUser: userID).map(\.id) == signIns.suffix(3).map(\.session.id))
            for ended in signIns.prefix(2) {
                #expect(await code { _ = try await accounts.authenticate(bearer: ended.accessToken, now: start) } == .sessionNotFound)
                #expect(await code { _ = try await accounts.refresh(ended.refreshToken, now: start) } != nil)
            }
            _ = try await accounts.authenticate(bearer: signIns[4].accessToken, now: start)
            #expect(try await revokedSessions(store) == signIns.prefix(2).map(\.session.id))
        }
        try await withService(kind, extra: ", max_sessions_per_user: 1") { accounts, store in
            let anonymous = try await accounts.signUpAnonymously(data: [:], now: Date())
            let caller = try await accounts.authenticate(bearer: anonymous.accessToken, now: Date())
            let linked = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "linking"), rawNonce: nil, linkingTo: caller, now: Date())
            #expect(try await store.sessions(ofUser: anonymous.user.id).map(\.id) == [linked.session.id])
            #expect(await code { _ = try await accounts.authenticate(bearer: anonymous.accessToken, now: Date()) } == .sessionNotFound)
            #expect(try await revokedSessions(store) == [anonymous.session.id])
        }
    }

    /// The sessions announced on the revocation stream so far, in order.
    private func revokedSessions(_ store: any AuthStore) async throws -> [String?] {
        if let memory = store as? MemoryAuthStore { return await memory.revocations.map(\.sessionID) }
        let redis = try #require(store as? RedisAuthStore)
        let entries = try RedisStreamEntry.entries(
            from: try await redis.redis.send(RedisCommand("XRANGE", .string(redis.keyPrefix + "revocations"), "-", "+")))
        return entries.map { $0["session"] }
    }

    @Test(
        "logout scopes: local, others, global; each revocation is on the stream; a logout that ends nothing is no audit event",
        arguments: StoreKind.allCases)
    func logoutScopes(kind: StoreKind) async throws {
        try await withService(kind) { accounts, store in
            let first = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "L"), rawNonce: nil, linkingTo: nil, now: Date())
            let second = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "L"), rawNonce: nil, linkingTo: nil, now: Date())
            let third = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "L"), rawNonce: nil, linkingTo: nil, now: Date())
            try await accounts.logout(try await accounts.authenticate(bearer: first.accessToken, now: Date()), scope: .local, now: Date())
            #expect(Set(try await store.sessions(ofUser: first.user.id).map(\.id)) == [second.session.id, third.session.id])
            try await accounts.logout(try await accounts.authenticate(bearer: second.accessToken, now: Date()), scope: .others, now: Date())
            #expect(try await store.sessions(ofUser: first.user.id).map(\.id) == [second.session.id])
            // With no other session left, `others` ends nothing: no event, however often it is sent
            // (the audit stream keeps a fixed number of entries; each would push an older one out).
            for _ in 0..<20 {
                try await accounts.logout(try await accounts.authenticate(bearer: second.accessToken, now: Date()), scope: .others, now: Date())
            }
            try await store.flushAudit()
            let logouts = try await store.auditEvents(AuditQuery(userID: first.user.id, limit: 100)).filter { $0.action == "logout" }
            #expect(logouts.map { $0.detail["sessions"] } == ["1", "1"], "\(logouts)")
            try await accounts.logout(try await accounts.authenticate(bearer: second.accessToken, now: Date()), scope: .global, now: Date())
            #expect(try await store.sessions(ofUser: first.user.id).isEmpty)
            if let memory = store as? MemoryAuthStore {
                #expect(await memory.revocations.map(\.sessionID) == [first.session.id, third.session.id, second.session.id])
            } else if let redis = store as? RedisAuthStore {
                let entries = try RedisStreamEntry.entries(
                    from: try await redis.redis.send(RedisCommand("XRANGE", .string(redis.keyPrefix + "revocations"), "-", "+")))
                #expect(entries.map { $0["session"] } == [first.session.id, third.session.id, second.session.id])
                #expect(entries.allSatisfy { $0["reason"] == "logout" && $0["kind"] == "session" })
            }
        }
    }

    @Test("user_metadata: shallow merge, null deletes", arguments: StoreKind.allCases)
    func metadata(kind: StoreKind) async throws {
        try await withService(kind) { accounts, _ in
            let session = try await accounts.signUpAnonymously(data: ["a": 1, "b": "x"], now: Date())
            let caller = try await accounts.authenticate(bearer: session.accessToken, now: Date())
            let (user, _) = try await accounts.updateMetadata(
                of: caller, data: ["b": .null, "full_name": "Grace Hopper"], limit: 16 << 10, now: Date())
            #expect(user.userMetadata == ["a": 1, "full_name": "Grace Hopper"])
            let reread = try await accounts.authenticate(bearer: session.accessToken, now: Date())
            #expect(reread.user.userMetadata == user.userMetadata)
        }
    }
}
