import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

@testable import AuthGateCore

/// Single use of ID tokens and server-issued nonces, on both stores.
@Suite("Single use: replay guard and server nonces, memory and Redis stores", .serialized, .timeLimit(.minutes(3)))
struct SingleUseTests {
    typealias StoreKind = TestStoreKind

    private static let logger = Logger(label: "single-use-test")

    private func withStore(_ kind: StoreKind, _ body: (any AuthStore) async throws -> Void) async throws {
        try await withTestStore(kind, body)
    }

    /// A sign-in verifier for a fake provider, with server nonces required or not.
    private func signIn(
        store: any AuthStore,
        provider: FakeProvider,
        requireServerNonce: Bool = false
    ) throws -> (IDTokenSignInVerifier, ServerNonceIssuer) {
        let yaml = """
            providers: { oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)", require_server_nonce: \(requireServerNonce) } ] }
            """
        let configuration = try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: "", environment: [:])
        let keySet = ProviderKeySet(
            provider: "fake", source: .file(try jwksFile(FakeProvider.sharedKeys)), algorithm: .rs256, fetcher: UnusedFetcher(), logger: Self.logger)
        let registry = IdentityVerifierRegistry(
            verifiers: [OIDCVerifier(configuration: try #require(configuration.providers.oidc.first), keySet: keySet)],
            anonymous: AnonymousProvider(configuration: configuration.providers.anonymous)
        )
        let nonces = ServerNonceIssuer(store: store, lifetime: configuration.replay.serverNonceTTL)
        return (
            IDTokenSignInVerifier(registry: registry, replayGuard: ReplayGuard(store: store, configuration: configuration.replay), nonces: nonces),
            nonces
        )
    }

    private func jwksFile(_ keys: [FakeProvider.Key]) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        try FakeProvider.jwks(keys).write(to: url, atomically: true, encoding: .utf8)
        return RemovedAtExit.register(url.path)
    }

    /// A token of `provider` for `subject` whose nonce claim is the hash of `nonce`.
    private static func token(from provider: FakeProvider, nonce: String, subject: String) -> String {
        FakeProvider.token(
            claims: FakeProvider.claims(
                issuer: provider.issuer, audience: "app", subject: subject, extra: ["nonce": .string(NonceRule.hashed(nonce))]),
            key: FakeProvider.sharedKeys[0]
        )
    }

    private func code(_ body: () async throws -> VerifiedIdentity) async -> AuthGateError.Code? {
        do {
            _ = try await body()
            return nil
        } catch {
            return (error as? AuthGateError)?.code
        }
    }

    @Test("an ID token is accepted once; the second presentation is refused as replayed", arguments: StoreKind.allCases)
    func replayRejected(kind: StoreKind) async throws {
        let provider = try await FakeProvider.start(keys: FakeProvider.sharedKeys)
        defer { Task { await provider.stop() } }
        try await withStore(kind) { (store: any AuthStore) async throws in
            let (verifier, _) = try signIn(store: store, provider: provider)
            let token = FakeProvider.token(claims: FakeProvider.claims(issuer: provider.issuer, audience: "app"), key: FakeProvider.sharedKeys[0])
            let identity = try await verifier.verify(provider: "fake", idToken: token, rawNonce: nil, now: Date())
            #expect(identity.subject == "user-1")
            #expect(await code { try await verifier.verify(provider: "fake", idToken: token, rawNonce: nil, now: Date()) } == .replayed)
            // The diagnostic path never records a replay.
            let other = FakeProvider.token(
                claims: FakeProvider.claims(issuer: provider.issuer, audience: "app", subject: "user-2"), key: FakeProvider.sharedKeys[0]
            )
            for _ in 0..<3 { _ = try await verifier.registry.verifier(for: "fake").verify(idToken: other, rawNonce: nil, now: Date()) }
            _ = try await verifier.verify(provider: "fake", idToken: other, rawNonce: nil, now: Date())
        }
        await provider.stop()
    }

    @Test("100 concurrent presentations of one token: exactly one wins", arguments: StoreKind.allCases)
    func replayRace(kind: StoreKind) async throws {
        let provider = try await FakeProvider.start(keys: FakeProvider.sharedKeys)
        try await withStore(kind) { (store: any AuthStore) async throws in
            let (verifier, _) = try signIn(store: store, provider: provider)
            let token = FakeProvider.token(claims: FakeProvider.claims(issuer: provider.issuer, audience: "app"), key: FakeProvider.sharedKeys[1])
            let outcomes = await withTaskGroup(of: AuthGateError.Code?.self) { group in
                for _ in 0..<100 {
                    group.addTask { await code { try await verifier.verify(provider: "fake", idToken: token, rawNonce: nil, now: Date()) } }
                }
                return await group.reduce(into: [AuthGateError.Code?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1)
            #expect(outcomes.filter { $0 == .replayed }.count == 99)
        }
        await provider.stop()
    }

    @Test("values kept until a time: inserted once, read while unexpired, taken by one caller", arguments: StoreKind.allCases)
    func expiringValues(kind: StoreKind) async throws {
        try await withStore(kind) { (store: any AuthStore) async throws in
            let key = "flow:test:\(UUID().uuidString)"
            #expect(try await store.insertIfAbsent(key, value: "first", expiresAt: Date().addingTimeInterval(60)))
            #expect(try await store.insertIfAbsent(key, value: "second", expiresAt: Date().addingTimeInterval(60)) == false)
            #expect(try await store.value(of: key) == "first")
            let takers = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<20 { group.addTask { try? await store.take(key) } }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(takers.compactMap { $0 } == ["first"])
            #expect(try await store.value(of: key) == nil)
            let expired = "flow:test:\(UUID().uuidString)"
            #expect(try await store.insertIfAbsent(expired, value: "old", expiresAt: Date().addingTimeInterval(-1)))
            #expect(try await store.value(of: expired) == nil)
            #expect(try await store.take(expired) == nil)
        }
    }

    @Test("server nonces: issued nonces are accepted once; unknown, reused or expired ones are refused", arguments: StoreKind.allCases)
    func serverNonces(kind: StoreKind) async throws {
        let provider = try await FakeProvider.start(keys: FakeProvider.sharedKeys)
        try await withStore(kind) { (store: any AuthStore) async throws in
            let (verifier, nonces) = try signIn(store: store, provider: provider, requireServerNonce: true)
            func token(nonce: String, subject: String) -> String { Self.token(from: provider, nonce: nonce, subject: subject) }
            let issued = try await nonces.issue(now: Date())
            #expect(issued.nonce.count == 43)
            #expect(issued.expiresAt.timeIntervalSinceNow > 590)
            _ = try await verifier.verify(provider: "fake", idToken: token(nonce: issued.nonce, subject: "a"), rawNonce: issued.nonce, now: Date())
            // Reused with a fresh token: the nonce is gone.
            #expect(
                await code {
                    try await verifier.verify(
                        provider: "fake", idToken: token(nonce: issued.nonce, subject: "b"), rawNonce: issued.nonce, now: Date())
                }
                    == .serverNonceUnknown
            )
            // A nonce the client made up: the provider's checks pass, ours does not.
            #expect(
                await code {
                    try await verifier.verify(provider: "fake", idToken: token(nonce: "made-up", subject: "c"), rawNonce: "made-up", now: Date())
                }
                    == .serverNonceUnknown
            )
            // Issued, never used, and past its lifetime (issued 601 s ago with a 600 s lifetime;
            // the stores keep it by absolute expiry): refused like an unknown one.
            let expired = try await nonces.issue(now: Date().addingTimeInterval(-601))
            #expect(expired.expiresAt < Date())
            #expect(
                await code {
                    try await verifier.verify(
                        provider: "fake", idToken: token(nonce: expired.nonce, subject: "d"), rawNonce: expired.nonce, now: Date())
                }
                    == .serverNonceUnknown
            )
            #expect(try await nonces.consume(expired.nonce) == false, "an expired nonce is gone, not merely refused once")
            // Concurrent consumption of one nonce: exactly one succeeds.
            let contested = try await nonces.issue(now: Date())
            let wins = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<50 { group.addTask { (try? await nonces.consume(contested.nonce)) == true } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
        }
        await provider.stop()
    }

    @Test(
        "marks taken with the sign-in's lookup: the replay record, then the nonce, refused as when taken alone; one of 50 racing lookups wins",
        arguments: StoreKind.allCases)
    func marksTakenWithTheLookup(kind: StoreKind) async throws {
        let provider = try await FakeProvider.start(keys: FakeProvider.sharedKeys)
        try await withStore(kind) { (store: any AuthStore) async throws in
            let (verifier, nonces) = try signIn(store: store, provider: provider, requireServerNonce: true)
            func token(nonce: String, subject: String) -> String { Self.token(from: provider, nonce: nonce, subject: subject) }
            func lookup(_ idToken: String, _ nonce: String) async -> AuthGateError.Code? {
                do {
                    let (identity, marks) = try await verifier.check(provider: "fake", idToken: idToken, rawNonce: nonce, now: Date())
                    #expect(marks.replay != nil && marks.serverNonce != nil)
                    _ = try await store.signInLookup(provider: "fake", subject: identity.subject, email: nil, taking: marks)
                    return nil
                } catch let error as AuthGateError {
                    return error.code
                } catch {
                    Issue.record("not an AuthGateError: \(error)")
                    return nil
                }
            }
            let first = try await nonces.issue(now: Date())
            let tokenA = token(nonce: first.nonce, subject: "a")
            #expect(await lookup(tokenA, first.nonce) == nil)
            // Checking alone takes nothing: the token and the nonce were taken by the lookup.
            _ = try await verifier.check(provider: "fake", idToken: tokenA, rawNonce: first.nonce, now: Date())
            #expect(await lookup(tokenA, first.nonce) == .replayed)

            // A replayed token is refused before its nonce is touched: a fresh nonce stays usable.
            let second = try await nonces.issue(now: Date())
            let (_, replayedMarks) = try await verifier.check(provider: "fake", idToken: tokenA, rawNonce: first.nonce, now: Date())
            let freshNonceKey: String = try #require(ServerNonceIssuer.storeKey(for: second.nonce))
            let withFreshNonce = SingleUseMarks(provider: "fake", replay: replayedMarks.replay, serverNonce: freshNonceKey)
            let refused = await #expect(throws: AuthGateError.self) {
                _ = try await store.signInLookup(provider: "fake", subject: "a", email: nil, taking: withFreshNonce)
            }
            #expect(refused?.code == .replayed)
            #expect(try await nonces.consume(second.nonce), "the fresh nonce was not used up by a refused replay")

            // A fresh token with a used nonce: refused for the nonce, and the token is used up
            // (the replay record is taken first), as when the marks are taken alone.
            let tokenB = token(nonce: first.nonce, subject: "b")
            #expect(await lookup(tokenB, first.nonce) == .serverNonceUnknown)
            let (_, marksB) = try await verifier.check(provider: "fake", idToken: tokenB, rawNonce: first.nonce, now: Date())
            let takenAlone = await #expect(throws: AuthGateError.self) { try await verifier.take(marksB) }
            #expect(takenAlone?.code == .replayed)

            // Atomic: of 50 lookups carrying the same marks, exactly one takes them.
            let contested = try await nonces.issue(now: Date())
            let tokenC = token(nonce: contested.nonce, subject: "c")
            let outcomes = await withTaskGroup(of: AuthGateError.Code?.self) { group in
                for _ in 0..<50 { group.addTask { await lookup(tokenC, contested.nonce) } }
                return await group.reduce(into: [AuthGateError.Code?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1)
            #expect(outcomes.filter { $0 == .replayed }.count == 49)
        }
        await provider.stop()
    }

    @Test("a sign-in's lookup names no key outside the store's prefix: it runs for a Redis user whose ACL allows only the prefix")
    func lookupWithinThePrefix() async throws {
        let provider = try await FakeProvider.start(keys: FakeProvider.sharedKeys)
        var url = try await SharedRedis.url()
        let admin = RedisClient(configuration: .init(url: url, poolSize: 1), logger: Self.logger)
        let suffix = UInt32.random(in: 0...UInt32.max)
        let (name, password, prefix) = ("acl-\(suffix)", "pw-\(suffix)", "acl\(suffix):")
        _ = try await admin.send(RedisCommand("ACL", "SETUSER", .string(name), "on", .string(">\(password)"), .string("~\(prefix)*"), "+@all"))
        url.username = name
        url.password = password
        let client = RedisClient(configuration: .init(url: url, poolSize: 1), logger: Self.logger)
        do {
            let store = RedisAuthStore(redis: client, keyPrefix: prefix)
            let (verifier, nonces) = try signIn(store: store, provider: provider, requireServerNonce: true)
            // Every optional key present, then none: each shape of the script's KEYS.
            let issued = try await nonces.issue(now: Date())
            let (identity, marks) = try await verifier.check(
                provider: "fake", idToken: Self.token(from: provider, nonce: issued.nonce, subject: "acl"), rawNonce: issued.nonce, now: Date())
            let full = try await store.signInLookup(provider: "fake", subject: identity.subject, email: "acl@example.com", taking: marks)
            #expect(full.identityOwner == nil && full.emailHolder == nil)
            let bare = try await store.signInLookup(provider: "fake", subject: identity.subject, email: nil, taking: nil)
            #expect(bare.identityOwner == nil)
            // And the refusal still comes from the script, not from the ACL.
            let refused = await #expect(throws: AuthGateError.self) {
                _ = try await store.signInLookup(provider: "fake", subject: identity.subject, email: nil, taking: marks)
            }
            #expect(refused?.code == .replayed)
        } catch {
            await client.shutdown()
            _ = try? await admin.send(RedisCommand("ACL", "DELUSER", .string(name)))
            await admin.shutdown()
            throw error
        }
        await client.shutdown()
        _ = try await admin.send(RedisCommand("ACL", "DELUSER", .string(name)))
        await admin.shutdown()
        await provider.stop()
    }

    @Test("expired records free their keys", arguments: StoreKind.allCases)
    func expiry(kind: StoreKind) async throws {
        try await withStore(kind) { (store: any AuthStore) async throws in
            #expect(try await store.insertIfAbsent("k", expiresAt: Date().addingTimeInterval(-1)))
            #expect(try await store.insertIfAbsent("k", expiresAt: Date().addingTimeInterval(60)))
            #expect(try await store.insertIfAbsent("k", expiresAt: Date().addingTimeInterval(60)) == false)
            #expect(try await store.consume("k"))
            #expect(try await store.consume("k") == false)
            #expect(try await store.consume("never") == false)
        }
    }
}
