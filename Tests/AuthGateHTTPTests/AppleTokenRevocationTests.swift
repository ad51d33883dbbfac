import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import RedisBridge
import Testing

@testable import AuthGateHTTP

/// Apple's refresh token obtained from the app's authorization code (in the id_token grant and at
/// `POST /auth/v1/user/apple/authorization_code`), kept sealed, and revoked through the outbox
/// when the account is deleted: against a fake Apple that checks every client secret.
@Suite("Apple token exchange and revocation", .timeLimit(.minutes(3)))
struct AppleTokenRevocationTests {
    static let audience = "com.example.app"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"

    /// A gateway with Apple's REST API credentials, a fake Apple for keys and one for the REST API.
    private struct Rig {
        let keys: FakeProvider
        let api: FakeAppleAPI
        let dependencies: GatewayApplication.Dependencies
        let app: Application<GatewayRouterResponder<AuthGateRequestContext>>
        let directory: String
        let signingKey: FakeProvider.Key

        var worker: ProviderRevocationWorker {
            ProviderRevocationWorker(store: dependencies.store, revoker: dependencies.providerTokenRevoker, logger: Logger(label: "revocations"))
        }

        func stop() async {
            await api.stop()
            await keys.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private func rig(store: any AuthStore = MemoryAuthStore(), userUpdate: String = "60/1m", extra: String = "") async throws -> Rig {
        let signingKey = FakeProvider.sharedKeys[0]
        let keys = try await FakeProvider.start(keys: [signingKey])
        let teamKey = P256.Signing.PrivateKey()
        let api = try await FakeAppleAPI.start(teamID: Self.teamID, keyID: Self.keyID, publicKey: teamKey.publicKey)
        let directory = NSTemporaryDirectory() + "authgate-apple-api-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try teamKey.pemRepresentation.write(toFile: directory + "/apple.p8", atomically: true, encoding: .utf8)
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString().write(
            toFile: directory + "/token.key", atomically: true, encoding: .utf8)
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers:
                  token_encryption_key_file: token.key
                  apple: { enabled: true, audiences: [\(Self.audience)], jwks_url: "\(keys.jwksURL)", team_id: \(Self.teamID),
                           key_id: \(Self.keyID), private_key_file: apple.p8, api_url: "\(api.url)" }
                  google: { enabled: true, audiences: [web-client], jwks_url: "\(keys.jwksURL)", revocation_url: "\(api.googleRevocationURL)" }
                  anonymous: { enabled: true }
                rate_limits: { token: off, signup: off, nonce: off, user_update: \(userUpdate) }
                \(extra)
                """,
            baseDirectory: directory, environment: [:])
        let verifiers = IdentityVerifierRegistry(
            providers: configuration.providers, fetcher: HTTPJWKSFetcher(client: .shared), logger: .init(label: "apple-api"))
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: store, keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true),
            verifiers: verifiers, providerHTTPClient: .shared)
        let app = Application(router: GatewayApplication.buildRouter(dependencies))
        return Rig(keys: keys, api: api, dependencies: dependencies, app: app, directory: directory, signingKey: signingKey)
    }

    private func idToken(_ subject: String, key: FakeProvider.Key) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return FakeProvider.token(
            claims: [
                "iss": "https://appleid.apple.com", "aud": .string(Self.audience), "sub": .string(subject), "iat": .integer(now),
                "exp": .integer(now + 600), "email": .string("\(subject)@privaterelay.appleid.com"), "email_verified": "true",
                "jti": .string(UUID().uuidString)
            ],
            key: key)
    }

    /// Signs in with Apple (with `code` in the body when given): the status and the JSON answer.
    private func signIn(_ client: some TestClientProtocol, _ rig: Rig, subject: String, code: String? = nil, userAgent: String = "test")
        async throws -> (HTTPResponse.Status, [String: JSONValue])
    {
        let extra = code.map { ",\"authorization_code\":\"\($0)\"" } ?? ""
        return try await client.execute(
            uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json", .userAgent: userAgent],
            body: ByteBuffer(string: "{\"provider\":\"apple\",\"id_token\":\"\(idToken(subject, key: rig.signingKey))\"\(extra)}")
        ) { response in
            (response.status, (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:])
        }
    }

    private func appleIdentity(_ rig: Rig, userID: String) async throws -> IdentityRecord {
        try #require(try await rig.dependencies.store.identities(ofUser: userID).first { $0.provider == "apple" })
    }

    private func sealer(_ rig: Rig) throws -> ProviderTokenSealer {
        ProviderTokenSealer(key: try #require(rig.dependencies.configuration.providers.tokenEncryptionKey))
    }

    @Test(
        "the id_token grant's authorization_code is exchanged at Apple (client secret checked) and Apple's refresh token kept sealed",
        arguments: TestStoreKind.allCases)
    func codeInGrant(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let rig = try await rig(store: store)
            rig.api.register(code: "c-1", subject: "apple-sub-1")
            try await rig.app.test(.router) { client in
                let (status, body) = try await signIn(client, rig, subject: "apple-sub-1", code: "c-1")
                #expect(status == .ok, "\(body)")
                let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
                let identity = try await appleIdentity(rig, userID: userID)
                let sealed = try #require(identity.sealedRefreshToken)
                #expect(!sealed.contains("apple-refresh"), "the refresh token is stored sealed, never in the clear")
                #expect(try sealer(rig).open(sealed, provider: "apple", subject: "apple-sub-1") == FakeAppleAPI.refreshToken(for: "c-1"))
                #expect(identity.refreshTokenClientID == Self.audience)
                #expect(!"\(body)".contains("apple-refresh") && !"\(body)".contains(sealed), "never sent to the client")
                #expect(rig.api.refusedSecrets == 0)
                if let redisStore = store as? RedisAuthStore {
                    let everything = try await Self.everyValue(redisStore)
                    #expect(!everything.isEmpty)
                    #expect(!everything.contains { $0.contains("apple-refresh") }, "Apple's refresh token is in Redis only sealed")
                }

                // A returning sign-in without a code keeps the token.
                let (again, _) = try await signIn(client, rig, subject: "apple-sub-1")
                #expect(again == .ok)
                #expect(try await appleIdentity(rig, userID: userID).sealedRefreshToken == sealed)

                // A used code, or a code of another Apple account, fails the sign-in and writes nothing.
                let (used, usedBody) = try await signIn(client, rig, subject: "apple-sub-2", code: "c-1")
                #expect(used == .badRequest)
                #expect(usedBody["error_code"]?.stringValue == "provider_code_rejected", "\(usedBody)")
                rig.api.register(code: "c-other", subject: "apple-sub-9")
                let (mismatch, _) = try await signIn(client, rig, subject: "apple-sub-2", code: "c-other")
                #expect(mismatch == .badRequest)
                #expect(try await store.owner(ofIdentity: "apple", subject: "apple-sub-2") == nil)
            }
            await rig.stop()
        }
    }

    @Test("POST /auth/v1/user/apple/authorization_code stores the token for the caller's Apple identity; a user without one gets 422")
    func codeAtOwnEndpoint() async throws {
        let rig = try await rig()
        rig.api.register(code: "c-2", subject: "apple-sub-3")
        try await rig.app.test(.router) { client in
            let (_, body) = try await signIn(client, rig, subject: "apple-sub-3")
            let access = try #require(body["access_token"]?.stringValue)
            let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
            #expect(try await appleIdentity(rig, userID: userID).sealedRefreshToken == nil)
            let headers: HTTPFields = [.authorization: "Bearer \(access)", .contentType: "application/json"]
            try await client.execute(
                uri: "/auth/v1/user/apple/authorization_code", method: .post, headers: headers,
                body: ByteBuffer(string: "{\"authorization_code\":\"c-2\"}")
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                #expect(!String(buffer: response.body).contains("refresh"), "the token never goes back")
            }
            let sealed = try #require(try await appleIdentity(rig, userID: userID).sealedRefreshToken)
            #expect(try sealer(rig).open(sealed, provider: "apple", subject: "apple-sub-3") == FakeAppleAPI.refreshToken(for: "c-2"))
            try await client.execute(
                uri: "/auth/v1/user/apple/authorization_code", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"authorization_code\":\"c-2\"}")
            ) { #expect($0.status == .unauthorized) }

            let anonymous = try await client.execute(uri: "/auth/v1/signup", method: .post) { response in
                try JSONValue.parse(Array(response.body.readableBytesView)).objectValue?["access_token"]?.stringValue
            }
            try await client.execute(
                uri: "/auth/v1/user/apple/authorization_code", method: .post,
                headers: [.authorization: "Bearer \(anonymous ?? "")", .contentType: "application/json"],
                body: ByteBuffer(string: "{\"authorization_code\":\"c-3\"}")
            ) { response in
                #expect(response.status == .unprocessableContent)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "identity_not_found")
            }
        }
        await rig.stop()
    }

    @Test(
        "each code is a round trip to Apple: a user's calls count against rate_limits.user_update (429 past it, Apple not called), shared with PUT /user and per user"
    )
    func codeEndpointPerUserBudget() async throws {
        let rig = try await rig(userUpdate: "3/1m")
        try await rig.app.test(.router) { client in
            func call(_ access: String, code: String) async throws -> HTTPResponse.Status {
                try await client.execute(
                    uri: "/auth/v1/user/apple/authorization_code", method: .post,
                    headers: [.authorization: "Bearer \(access)", .contentType: "application/json"],
                    body: ByteBuffer(string: "{\"authorization_code\":\"\(code)\"}")
                ) { $0.status }
            }
            let (_, first) = try await signIn(client, rig, subject: "apple-sub-budget")
            let access = try #require(first["access_token"]?.stringValue)
            // Codes Apple does not know: each still costs a call to Apple.
            for index in 0..<3 { #expect(try await call(access, code: "unknown-\(index)") == .badRequest) }
            #expect(rig.api.tokenCalls == 3)
            #expect(try await call(access, code: "unknown-3") == .tooManyRequests)
            #expect(rig.api.tokenCalls == 3, "a refused call does not reach Apple")
            // The budget is the one PUT /user spends.
            try await client.execute(
                uri: "/auth/v1/user", method: .put, headers: [.authorization: "Bearer \(access)", .contentType: "application/json"],
                body: ByteBuffer(string: "{\"data\":{\"a\":1}}")
            ) { #expect($0.status == .tooManyRequests) }
            // Another user has a budget of their own.
            let (_, second) = try await signIn(client, rig, subject: "apple-sub-budget-2")
            #expect(try await call(try #require(second["access_token"]?.stringValue), code: "unknown-4") == .badRequest)
            #expect(rig.api.tokenCalls == 4)
        }
        await rig.stop()
    }

    @Test(
        "deleting the user queues Apple's token; the worker revokes it with Apple's fields, retrying through 503s; invalid_grant finishes it",
        arguments: TestStoreKind.allCases)
    func revokedOnDeletion(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let rig = try await rig(store: store)
            rig.api.register(code: "c-4", subject: "apple-sub-4")
            rig.api.register(code: "c-5", subject: "apple-sub-5")
            try await rig.app.test(.router) { client in
                let (_, first) = try await signIn(client, rig, subject: "apple-sub-4", code: "c-4")
                let (_, second) = try await signIn(client, rig, subject: "apple-sub-5", code: "c-5")
                let firstUser = try #require(first["user"]?.objectValue?["id"]?.stringValue)
                let secondUser = try #require(second["user"]?.objectValue?["id"]?.stringValue)
                let admin = AdminService(store: store, logger: Logger(label: "admin"))
                let now = Date()
                #expect(try await admin.deleteUser(firstUser, soft: false, now: now))
                #expect(try await admin.deleteUser(secondUser, soft: true, now: now))
                let queued = try await store.providerRevocations()
                #expect(queued.count == 2)
                #expect(queued.allSatisfy { !$0.sealedToken.contains("apple-refresh") })

                rig.api.queueRevokeAnswers([.init(status: 503), .init(status: 503), .init(status: 400, error: "invalid_grant")])
                #expect(await rig.worker.workOnce(now: now) == 0, "first due after the deletion has landed")
                let due = now.addingTimeInterval(ProviderRevocation.firstCallDelay.inSeconds)
                #expect(await rig.worker.workOnce(now: due) == 2)
                var pending = try await store.providerRevocations()
                #expect(pending.count == 2 && pending.allSatisfy { $0.attempts == 1 && $0.failedAt == nil && $0.lastError != nil })
                #expect(await rig.worker.workOnce(now: due) == 0, "nothing is due before its backoff")
                let later = due.addingTimeInterval(ProviderRevocationWorker.backoff(afterAttempts: 1).inSeconds + 1)
                #expect(await rig.worker.workOnce(now: later) == 2)
                pending = try await store.providerRevocations()
                #expect(pending.isEmpty, "one revoked, one already invalid: both finished; left \(pending)")
                let calls = rig.api.revokes
                #expect(calls.count == 4)
                #expect(Set(calls.map(\.token)) == [FakeAppleAPI.refreshToken(for: "c-4"), FakeAppleAPI.refreshToken(for: "c-5")])
                #expect(calls.allSatisfy { $0.clientID == Self.audience && $0.tokenTypeHint == "refresh_token" })
                #expect(rig.api.refusedSecrets == 0)
            }
            await rig.stop()
        }
    }

    @Test("a permanent refusal is given up and listed; twenty failed calls are too")
    func givenUp() async throws {
        let rig = try await rig()
        rig.api.register(code: "c-6", subject: "apple-sub-6")
        try await rig.app.test(.router) { client in
            let (_, body) = try await signIn(client, rig, subject: "apple-sub-6", code: "c-6")
            let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
            #expect(
                try await AdminService(store: rig.dependencies.store, logger: Logger(label: "admin")).deleteUser(userID, soft: false, now: Date()))
        }
        rig.api.queueRevokeAnswers([.init(status: 400, error: "invalid_request")])
        #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(31)) == 1)
        let failed = try await rig.dependencies.store.providerRevocations()
        #expect(failed.count == 1 && failed.first?.failedAt != nil && failed.first?.lastError?.contains("invalid_request") == true)
        #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(86_400 * 30)) == 0, "a given-up entry is never called again")

        // An Apple that is always down: the entry is given up after the last attempt.
        var entry = try #require(failed.first)
        entry.id = UUID().uuidString
        entry.failedAt = nil
        entry.attempts = ProviderRevocationWorker.maximumAttempts - 1
        try await rig.dependencies.store.enqueueProviderRevocations([entry])
        rig.api.queueRevokeAnswers([.init(status: 500)])
        #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(86_400 * 30)) == 1)
        #expect(try await rig.dependencies.store.providerRevocations().allSatisfy { $0.failedAt != nil })
        await rig.stop()
    }

    @Test("two replicas' workers on one Redis revoke each token exactly once")
    func exactlyOnceAcrossReplicas() async throws {
        try await withTestStore(.redis) { store in
            let rig = try await rig(store: store)
            let sealer = try sealer(rig)
            let now = Date()
            let entries = try (0..<40).map { index in
                ProviderRevocation(
                    id: UUID().uuidString, provider: "apple", clientID: Self.audience, subject: "s-\(index)", userID: UUID().uuidString,
                    sealedToken: try sealer.seal("token-\(index)", provider: "apple", subject: "s-\(index)"), createdAt: now)
            }
            try await store.enqueueProviderRevocations(entries)
            let first = rig.worker
            let second = rig.worker
            async let a = drain(first, now: now)
            async let b = drain(second, now: now)
            _ = await (a, b)
            let tokens = rig.api.revokes.map(\.token)
            #expect(tokens.count == 40, "each entry called once: \(tokens.count) calls")
            #expect(Set(tokens) == Set((0..<40).map { "token-\($0)" }))
            #expect(try await store.providerRevocations().isEmpty)
            await rig.stop()
        }
    }

    @Test("Apple down through a deletion and two gateway restarts: the revocation arrives once Apple is back, exactly once")
    func survivesRestarts() async throws {
        try await withTestStore(.redis) { store in
            let rig = try await rig(store: store)
            rig.api.register(code: "r-1", subject: "apple-restarts")
            try await rig.app.test(.router) { client in
                let (_, body) = try await signIn(client, rig, subject: "apple-restarts", code: "r-1")
                let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
                #expect(try await AdminService(store: store, logger: Logger(label: "admin")).deleteUser(userID, soft: false, now: Date()))
            }
            rig.api.queueRevokeAnswers([.init(status: 503), .init(status: 502)])
            // Each gateway's worker keeps nothing: a restart is a new worker on the same Redis.
            var now = Date().addingTimeInterval(ProviderRevocation.firstCallDelay.inSeconds + 1)
            for attempt in 1...3 {
                let worker = ProviderRevocationWorker(
                    store: store, revoker: rig.dependencies.providerTokenRevoker, logger: Logger(label: "restart-\(attempt)"))
                #expect(await worker.workOnce(now: now) == 1, "attempt \(attempt) found the entry")
                now = now.addingTimeInterval(ProviderRevocationWorker.backoff(afterAttempts: attempt).inSeconds + 1)
            }
            #expect(rig.api.revokes.map(\.status) == [503, 502, 200])
            #expect(rig.api.revokes.filter { $0.status == 200 }.map(\.token) == [FakeAppleAPI.refreshToken(for: "r-1")])
            #expect(try await store.providerRevocations().isEmpty)
            let late = ProviderRevocationWorker(store: store, revoker: rig.dependencies.providerTokenRevoker, logger: Logger(label: "late"))
            #expect(await late.workOnce(now: now.addingTimeInterval(86_400)) == 0, "nothing is revoked twice")
            await rig.stop()
        }
    }

    @Test("the outbox revokes a Google refresh token at Google's endpoint; invalid_token finishes it, 503 retries")
    func googleRevocation() async throws {
        let rig = try await rig()
        let sealer = try sealer(rig)
        let now = Date()
        let entries = try ["g-1", "g-2"].map { subject in
            ProviderRevocation(
                id: UUID().uuidString, provider: "google", clientID: nil, subject: subject, userID: UUID().uuidString,
                sealedToken: try sealer.seal("google-refresh-\(subject)", provider: "google", subject: subject), createdAt: now)
        }
        try await rig.dependencies.store.enqueueProviderRevocations(entries)
        rig.api.queueRevokeAnswers([.init(status: 503), .init(status: 400, error: "invalid_token")])
        #expect(await rig.worker.workOnce(now: now) == 2)
        #expect(try await rig.dependencies.store.providerRevocations().count == 1, "the 503 one waits for its retry")
        #expect(await rig.worker.workOnce(now: now.addingTimeInterval(ProviderRevocationWorker.backoff(afterAttempts: 1).inSeconds + 1)) == 1)
        #expect(try await rig.dependencies.store.providerRevocations().isEmpty)
        let calls = rig.api.googleRevokes
        #expect(calls.map(\.status) == [503, 400, 200])
        #expect(Set(calls.map(\.token)) == ["google-refresh-g-1", "google-refresh-g-2"])
        #expect(rig.api.revokes.isEmpty, "nothing went to Apple")
        await rig.stop()
    }

    private func drain(_ worker: ProviderRevocationWorker, now: Date) async {
        while await worker.workOnce(now: now) > 0 {}
    }

    @Test("the outbox leases each claim: a lost lease settles nothing, an expired one is claimed again", arguments: TestStoreKind.allCases)
    func leases(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let now = Date()
            let entry = ProviderRevocation(
                id: UUID().uuidString, provider: "google", clientID: nil, subject: "g-1", userID: "u-1", sealedToken: "v1.x", createdAt: now)
            try await store.enqueueProviderRevocations([entry])
            let claimed = try await store.claimProviderRevocations(now: now, lease: .seconds(60), limit: 10)
            #expect(claimed.count == 1 && claimed.first?.lease != nil)
            #expect(try await store.claimProviderRevocations(now: now.addingTimeInterval(30), lease: .seconds(60), limit: 10).isEmpty)
            let again = try await store.claimProviderRevocations(now: now.addingTimeInterval(61), lease: .seconds(60), limit: 10)
            #expect(again.count == 1, "an expired lease is claimed again")
            #expect(try await !store.settleProviderRevocation(try #require(claimed.first), as: .finished), "the first lease was lost")
            #expect(try await store.providerRevocations().count == 1)
            #expect(try await store.settleProviderRevocation(try #require(again.first), as: .finished))
            #expect(try await store.providerRevocations().isEmpty)
            // An entry put back as given up (an operator's copy, a restore) is listed, never claimed.
            var givenUp = entry
            givenUp.id = UUID().uuidString
            givenUp.failedAt = now
            try await store.enqueueProviderRevocations([givenUp])
            #expect(try await store.claimProviderRevocations(now: now.addingTimeInterval(86_400), lease: .seconds(60), limit: 10).isEmpty)
            #expect(try await store.providerRevocations().map(\.id) == [givenUp.id])
        }
    }

    // MARK: the account life cycle

    private func googleToken(_ subject: String, email: String, key: FakeProvider.Key) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return FakeProvider.token(
            claims: [
                "iss": "https://accounts.google.com", "aud": "web-client", "sub": .string(subject), "iat": .integer(now),
                "exp": .integer(now + 600), "email": .string(email), "email_verified": true, "jti": .string(UUID().uuidString)
            ],
            key: key)
    }

    private func json(_ response: TestResponse) -> [String: JSONValue] {
        (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:]
    }

    @Test(
        "DELETE /auth/v1/user: off by default; deletes the account (hard or soft), ends its tokens, queues Apple's token; the Apple account signs in again as a new user",
        arguments: TestStoreKind.allCases)
    func selfDelete(kind: TestStoreKind) async throws {
        for mode in UsersConfiguration.SelfDeleteMode.allCases {
            try await withTestStore(kind) { store in
                let rig = try await rig(store: store, extra: "users: { allow_self_delete: true, self_delete: \(mode.rawValue) }")
                rig.api.register(code: "d-1", subject: "apple-del")
                try await rig.app.test(.router) { client in
                    let (_, body) = try await signIn(client, rig, subject: "apple-del", code: "d-1")
                    let access = try #require(body["access_token"]?.stringValue)
                    let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
                    try await client.execute(uri: "/auth/v1/user", method: .delete, headers: [.authorization: "Bearer \(access)"]) { response in
                        #expect(response.status == .ok, "\(String(buffer: response.body))")
                        #expect(json(response) == [:])
                    }
                    try await client.execute(uri: "/auth/v1/user", method: .get, headers: [.authorization: "Bearer \(access)"]) { response in
                        #expect(response.status == .forbidden, "the deleted user's token is refused")
                    }
                    if mode == .soft {
                        let kept = try #require(try await store.user(id: userID))
                        #expect(kept.deletedAt != nil && kept.email == nil)
                    } else {
                        #expect(try await store.user(id: userID) == nil)
                    }
                    #expect(try await store.identities(ofUser: userID).isEmpty)
                    let queued = try await store.providerRevocations()
                    #expect(queued.count == 1 && queued.first?.userID == userID)
                    #expect(await rig.worker.workOnce(now: Date()) == 0, "first due after the removal has landed")
                    #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(31)) == 1)
                    #expect(rig.api.revokes.map(\.token) == [FakeAppleAPI.refreshToken(for: "d-1")])

                    let (again, fresh) = try await signIn(client, rig, subject: "apple-del")
                    #expect(again == .ok)
                    #expect(fresh["user"]?.objectValue?["id"]?.stringValue != userID, "a deleted user's Apple account gets a fresh user")
                }
                await rig.stop()
            }
        }
        // Off unless users.allow_self_delete.
        let off = try await rig()
        try await off.app.test(.router) { client in
            let (_, body) = try await signIn(client, off, subject: "apple-keep")
            let access = try #require(body["access_token"]?.stringValue)
            try await client.execute(uri: "/auth/v1/user", method: .delete, headers: [.authorization: "Bearer \(access)"]) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "self_delete_disabled")
            }
            #expect(try await off.dependencies.store.owner(ofIdentity: "apple", subject: "apple-keep") != nil)
        }
        await off.stop()
    }

    @Test("a sign-in older than users.self_delete_max_auth_age cannot delete the account: 403 reauthentication_needed, nothing changes")
    func selfDeleteNeedsRecentSignIn() async throws {
        let rig = try await rig(extra: "users: { allow_self_delete: true }")
        let accounts = try #require(rig.dependencies.accounts)
        try await rig.app.test(.router) { client in
            let (_, body) = try await signIn(client, rig, subject: "apple-old")
            let access = try #require(body["access_token"]?.stringValue)
            let caller = try await accounts.authenticate(bearer: access, now: Date())
            let later = Date().addingTimeInterval(11 * 60)
            do {
                try await accounts.deleteSelf(caller, mode: .hard, maxAuthAge: .seconds(600), now: later)
                Issue.record("an eleven-minute-old sign-in deleted the account")
            } catch let error as AuthGateError {
                #expect(error.code == .reauthenticationNeeded)
                let client = ErrorMapping.clientError(for: error, in: .authenticated) as? GoTrueError
                #expect(client?.status == .forbidden && client?.code == "reauthentication_needed")
            }
            #expect(try await rig.dependencies.store.user(id: caller.user.id) != nil)
            try await accounts.deleteSelf(caller, mode: .hard, maxAuthAge: .seconds(600), now: Date().addingTimeInterval(60))
            #expect(try await rig.dependencies.store.user(id: caller.user.id) == nil)
        }
        await rig.stop()
    }

    @Test(
        "DELETE /auth/v1/user/identities/{id}: GoTrue's refusals; unlinking Apple moves the email, drops the provider, queues the revocation",
        arguments: TestStoreKind.allCases)
    func unlink(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let rig = try await rig(store: store, extra: "security: { manual_linking_enabled: true }")
            rig.api.register(code: "u-1", subject: "apple-unlink")
            try await rig.app.test(.router) { client in
                let (_, body) = try await signIn(client, rig, subject: "apple-unlink", code: "u-1")
                let access = try #require(body["access_token"]?.stringValue)
                let refresh = try #require(body["refresh_token"]?.stringValue)
                let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
                let bearer: HTTPFields = [.authorization: "Bearer \(access)", .contentType: "application/json"]
                let apple = try await appleIdentity(rig, userID: userID)
                try await client.execute(uri: "/auth/v1/user/identities/\(apple.identityID)", method: .delete, headers: bearer) { response in
                    #expect(response.status == .unprocessableContent)
                    #expect(response.headers[GoTrueError.errorCodeHeader] == "single_identity_not_deletable")
                }
                let link =
                    "{\"provider\":\"google\",\"id_token\":\"\(googleToken("g-1", email: "person@example.com", key: rig.signingKey))\",\"link_identity\":true}"
                try await client.execute(uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: bearer, body: ByteBuffer(string: link)) {
                    #expect($0.status == .ok, "\(String(buffer: $0.body))")
                }
                try await client.execute(uri: "/auth/v1/user/identities/not-a-uuid", method: .delete, headers: bearer) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[GoTrueError.errorCodeHeader] == "validation_failed")
                }
                try await client.execute(uri: "/auth/v1/user/identities/\(UUID().uuidString)", method: .delete, headers: bearer) { response in
                    #expect(response.status == .unprocessableContent)
                    #expect(response.headers[GoTrueError.errorCodeHeader] == "identity_not_found")
                }
                try await client.execute(uri: "/auth/v1/user/identities/\(apple.identityID)", method: .delete, headers: bearer) { response in
                    #expect(response.status == .ok, "\(String(buffer: response.body))")
                    #expect(json(response) == [:])
                }
                let user = try #require(try await store.user(id: userID))
                #expect(user.email == "person@example.com", "the email moves to the remaining identity's")
                #expect(user.appMetadata["providers"] == .array(["google"]) && user.appMetadata["provider"] == "google")
                #expect(try await store.owner(ofIdentity: "apple", subject: "apple-unlink") == nil)
                // The next refresh carries the new app_metadata.
                try await client.execute(
                    uri: "/auth/v1/token?grant_type=refresh_token", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: "{\"refresh_token\":\"\(refresh)\"}")
                ) { response in
                    #expect(response.status == .ok)
                    #expect(json(response)["user"]?.objectValue?["app_metadata"]?.objectValue?["providers"] == .array(["google"]))
                }
                #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(31)) == 1)
                #expect(rig.api.revokes.map(\.token) == [FakeAppleAPI.refreshToken(for: "u-1")])
            }
            await rig.stop()
        }
        // The email would move to one another user holds: 422 email_conflict_identity_not_deletable, nothing changes.
        let conflict = try await rig(extra: "security: { manual_linking_enabled: true }")
        try await conflict.app.test(.router) { client in
            let other = "{\"provider\":\"google\",\"id_token\":\"\(googleToken("g-holder", email: "shared@example.com", key: conflict.signingKey))\"}"
            try await client.execute(
                uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: other)
            ) { #expect($0.status == .ok) }
            let (_, body) = try await signIn(client, conflict, subject: "apple-conflict")
            let access = try #require(body["access_token"]?.stringValue)
            let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
            let bearer: HTTPFields = [.authorization: "Bearer \(access)", .contentType: "application/json"]
            let link =
                "{\"provider\":\"google\",\"id_token\":\"\(googleToken("g-linked", email: "shared@example.com", key: conflict.signingKey))\",\"link_identity\":true}"
            try await client.execute(uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: bearer, body: ByteBuffer(string: link)) {
                #expect($0.status == .ok, "\(String(buffer: $0.body))")
            }
            let apple = try await appleIdentity(conflict, userID: userID)
            try await client.execute(uri: "/auth/v1/user/identities/\(apple.identityID)", method: .delete, headers: bearer) { response in
                #expect(response.status == .unprocessableContent)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "email_conflict_identity_not_deletable")
            }
            #expect(try await conflict.dependencies.store.identities(ofUser: userID).count == 2)
            #expect(try await conflict.dependencies.store.user(id: userID)?.email == "apple-conflict@privaterelay.appleid.com")
        }
        await conflict.stop()
        // Without security.manual_linking_enabled: 404 manual_linking_disabled.
        let off = try await rig()
        try await off.app.test(.router) { client in
            let (_, body) = try await signIn(client, off, subject: "apple-off")
            let access = try #require(body["access_token"]?.stringValue)
            try await client.execute(
                uri: "/auth/v1/user/identities/\(UUID().uuidString)", method: .delete, headers: [.authorization: "Bearer \(access)"]
            ) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "manual_linking_disabled")
            }
        }
        await off.stop()
    }

    @Test("GET /auth/v1/user/sessions lists the caller's devices (user agent, IP, current); DELETE /auth/v1/user/sessions/{id} signs one out")
    func ownSessions() async throws {
        let rig = try await rig()
        try await rig.app.test(.live) { client in
            let (_, phone) = try await signIn(client, rig, subject: "apple-devices", userAgent: "MyApp/1.0 (iPhone; iOS 18.1)")
            let (_, pad) = try await signIn(client, rig, subject: "apple-devices", userAgent: "MyApp/1.0 (iPad; iPadOS 18.1)")
            let phoneToken = try #require(phone["access_token"]?.stringValue)
            let padToken = try #require(pad["access_token"]?.stringValue)
            let payload = try #require(Base64URL.decode(padToken.split(separator: ".")[1]))
            let padSession = try #require(try JSONValue.parse(payload).objectValue?["session_id"]?.stringValue)
            let sessions = try await client.execute(
                uri: "/auth/v1/user/sessions", method: .get, headers: [.authorization: "Bearer \(phoneToken)"]
            ) { response in
                #expect(response.status == .ok)
                return json(response)["sessions"]?.arrayValue?.compactMap(\.objectValue) ?? []
            }
            #expect(sessions.count == 2)
            // Two sign-ins in the same millisecond may list in either order.
            #expect(Set(sessions.map { $0["user_agent"]?.stringValue ?? "" }) == ["MyApp/1.0 (iPhone; iOS 18.1)", "MyApp/1.0 (iPad; iPadOS 18.1)"])
            #expect(sessions.allSatisfy { $0["ip"]?.stringValue == "127.0.0.1" && $0["aal"]?.stringValue == "aal1" })
            #expect(sessions.filter { $0["current"] == .bool(true) }.map { $0["user_agent"]?.stringValue } == ["MyApp/1.0 (iPhone; iOS 18.1)"])
            #expect(sessions.filter { $0["current"] == .bool(false) }.map { $0["id"]?.stringValue } == [padSession])

            // Sign out the iPad from the iPhone: its token is refused at once, the iPhone's is not.
            try await client.execute(
                uri: "/auth/v1/user/sessions/\(padSession)", method: .delete, headers: [.authorization: "Bearer \(phoneToken)"]
            ) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/auth/v1/user", method: .get, headers: [.authorization: "Bearer \(padToken)"]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/auth/v1/user", method: .get, headers: [.authorization: "Bearer \(phoneToken)"]) {
                #expect($0.status == .ok)
            }
            for target in [padSession, UUID().uuidString, "not-a-session"] {
                try await client.execute(
                    uri: "/auth/v1/user/sessions/\(target)", method: .delete, headers: [.authorization: "Bearer \(phoneToken)"]
                ) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[GoTrueError.errorCodeHeader] == "session_not_found")
                }
            }
        }
        await rig.stop()
    }

    @Test(
        "the audit trail records every account event with actor, address and request id, never a token; GET /auth/v1/admin/audit pages and filters it",
        arguments: TestStoreKind.allCases)
    func auditTrail(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let rig = try await rig(store: store, extra: "users: { allow_self_delete: true }\nsecurity: { manual_linking_enabled: true }")
            rig.api.register(code: "a-1", subject: "apple-audit")
            let keys = try #require(rig.dependencies.signingKeys)
            let now = Int64(Date().timeIntervalSince1970)
            let serviceRole = try AccessTokenIssuer(keys: keys).mint(
                AccessTokenClaims(
                    iss: rig.dependencies.configuration.tokens.issuer, sub: "operator", aud: rig.dependencies.configuration.tokens.audience,
                    exp: now + 600, iat: now, email: "", phone: "", appMetadata: [:], userMetadata: [:], role: "service_role", aal: "aal1", amr: [],
                    sessionID: nil, isAnonymous: false))
            try await rig.app.test(.live) { client in
                let (_, first) = try await signIn(client, rig, subject: "apple-audit", code: "a-1")
                let userID = try #require(first["user"]?.objectValue?["id"]?.stringValue)
                let (_, second) = try await signIn(client, rig, subject: "apple-audit")
                let access = try #require(second["access_token"]?.stringValue)
                let bearer: HTTPFields = [
                    .authorization: "Bearer \(access)", .contentType: "application/json", HTTPField.Name("X-Request-Id")!: "req-audit-1"
                ]
                let link =
                    "{\"provider\":\"google\",\"id_token\":\"\(googleToken("g-a", email: "audit@example.com", key: rig.signingKey))\",\"link_identity\":true}"
                try await client.execute(uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: bearer, body: ByteBuffer(string: link)) {
                    #expect($0.status == .ok)
                }
                let google = try #require(try await store.identities(ofUser: userID).first { $0.provider == "google" })
                try await client.execute(uri: "/auth/v1/user/identities/\(google.identityID)", method: .delete, headers: bearer) {
                    #expect($0.status == .ok)
                }
                try await client.execute(uri: "/auth/v1/user", method: .delete, headers: bearer) { #expect($0.status == .ok) }
                #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(31)) == 1)

                let admin: HTTPFields = [.authorization: "Bearer \(serviceRole)"]
                let entries = try await client.execute(uri: "/auth/v1/admin/audit?user_id=\(userID)&per_page=100", method: .get, headers: admin) {
                    response in
                    #expect(response.status == .ok)
                    let text = String(buffer: response.body)
                    #expect(!text.contains("apple-refresh") && !text.contains(access) && !text.contains("a-1\""), "no token or code in the trail")
                    return (try? JSONValue.parse(Array(response.body.readableBytesView)).arrayValue) ?? []
                }
                let actions = entries.compactMap { $0.objectValue?["payload"]?.objectValue?["action"]?.stringValue }
                #expect(
                    actions == ["provider_token_revoked", "user_deleted", "identity_unlinked", "identity_linked", "login", "user_signedup"],
                    "newest first: \(actions)")
                let byAction = Dictionary(
                    entries.compactMap { entry -> (String, [String: JSONValue])? in
                        guard let object = entry.objectValue, let action = object["payload"]?.objectValue?["action"]?.stringValue else { return nil }
                        return (action, object)
                    }, uniquingKeysWith: { first, _ in first })
                #expect(byAction["user_deleted"]?["payload"]?.objectValue?["actor_id"]?.stringValue == userID, "the user deleted themselves")
                #expect(byAction["user_deleted"]?["payload"]?.objectValue?["traits"]?.objectValue?["request_id"]?.stringValue == "req-audit-1")
                #expect(byAction["user_deleted"]?["ip_address"]?.stringValue == "127.0.0.1")
                #expect(byAction["provider_token_revoked"]?["payload"]?.objectValue?["actor_id"]?.stringValue == "system")
                #expect(byAction["user_signedup"]?["payload"]?.objectValue?["traits"]?.objectValue?["provider"]?.stringValue == "apple")

                // Paging, and the admin's own read needs service_role.
                let page = try await client.execute(uri: "/auth/v1/admin/audit?user_id=\(userID)&per_page=2&page=2", method: .get, headers: admin) {
                    (try? JSONValue.parse(Array($0.body.readableBytesView)).arrayValue) ?? []
                }
                #expect(
                    page.compactMap { $0.objectValue?["payload"]?.objectValue?["action"]?.stringValue } == ["identity_unlinked", "identity_linked"])
                // The id in another spelling finds the same events; what is not an id is a 400.
                let upper = try await client.execute(
                    uri: "/auth/v1/admin/audit?user_id=\(userID.uppercased())&per_page=100", method: .get, headers: admin
                ) { (try? JSONValue.parse(Array($0.body.readableBytesView)).arrayValue) ?? [] }
                #expect(upper.count == entries.count)
                try await client.execute(uri: "/auth/v1/admin/audit?user_id=not-a-user", method: .get, headers: admin) {
                    #expect($0.status == .badRequest)
                }
                try await client.execute(uri: "/auth/v1/admin/audit", method: .get, headers: [.authorization: "Bearer \(access)"]) {
                    #expect($0.status == .forbidden || $0.status == .unauthorized)
                }
            }
            await rig.stop()
        }
    }

    @Test("a queued revocation whose identity still holds the token (its removal did not land) is dropped, not sent")
    func stillLinkedIsNotRevoked() async throws {
        let rig = try await rig()
        rig.api.register(code: "s-1", subject: "apple-stays")
        try await rig.app.test(.router) { client in
            let (_, body) = try await signIn(client, rig, subject: "apple-stays", code: "s-1")
            let userID = try #require(body["user"]?.objectValue?["id"]?.stringValue)
            let identity = try await appleIdentity(rig, userID: userID)
            try await rig.dependencies.store.enqueueProviderRevocations([try #require(ProviderRevocation.revoking(identity, now: Date()))])
            #expect(await rig.worker.workOnce(now: Date().addingTimeInterval(31)) == 1)
            #expect(rig.api.revokes.isEmpty, "a token still linked is not revoked")
            #expect(try await rig.dependencies.store.providerRevocations().isEmpty)
        }
        await rig.stop()
    }

    /// Every value under the store's prefix (strings, hash fields and values, set and stream
    /// members), as text.
    static func everyValue(_ store: RedisAuthStore) async throws -> [String] {
        var values: [String] = []
        var cursor = "0"
        repeat {
            let reply = try await store.redis.send(RedisCommand("SCAN", .string(cursor), "MATCH", .string(store.keyPrefix + "*"), "COUNT", 1000))
            guard let parts = reply.array, parts.count == 2 else { break }
            cursor = parts[0].string ?? "0"
            for key in parts[1].array?.compactMap(\.string) ?? [] {
                values.append(key)
                let type = try await store.redis.send(RedisCommand("TYPE", .string(key))).string ?? ""
                let content: RESPValue
                switch type {
                case "string": content = try await store.redis.send(RedisCommand("GET", .string(key)))
                case "hash": content = try await store.redis.send(RedisCommand("HGETALL", .string(key)))
                case "zset": content = try await store.redis.send(RedisCommand("ZRANGE", .string(key), 0, -1))
                case "set": content = try await store.redis.send(RedisCommand("SMEMBERS", .string(key)))
                case "stream": content = try await store.redis.send(RedisCommand("XRANGE", .string(key), "-", "+"))
                default: content = .null
                }
                values.append("\(content)")
                values += Self.strings(content)
            }
        } while cursor != "0"
        return values
    }

    private static func strings(_ value: RESPValue) -> [String] {
        if let text = value.string { return [text] }
        return (value.array ?? []).flatMap(strings)
    }
}
