import AuthGateTestSupport
import Foundation
import Logging
import NIOCore
import RedisBridge
import Testing

@testable import AuthGateCore

/// The edge's revocation decision when its view of the revocation feed is too stale to trust:
/// the store is asked, so a revocation the feed never delivered still refuses the token, and a
/// store that cannot answer refuses with 503 (fail closed). And the proxy's cache of verified
/// tokens: a hit is the very token verified, never a Unicode look-alike.
@Suite("Edge authenticator with a stale revocation feed", .timeLimit(.minutes(2)))
struct EdgeAuthenticatorTests: AccountsTesting {
    /// A route that requires a token and lets anonymous users in.
    func apiRoute() throws -> RouteConfiguration {
        let yaml = "routes: [ { name: api, path_prefix: /api, upstreams: [\"http://127.0.0.1:9\"], auth: required, allow_anonymous: true } ]"
        return try #require(try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: "", environment: [:]).routes.first)
    }

    @Test(
        "a stale view asks the store: live sessions pass, a revocation the feed lost refuses, a fresh view trusts memory",
        arguments: TestStoreKind.allCases)
    func staleViewAsksTheStore(kind: TestStoreKind) async throws {
        try await withService(kind) { accounts, store in
            let route = try apiRoute()
            let now = Date()
            let session = try await accounts.signUpAnonymously(data: [:], now: now)
            let view = RevocationView(retention: .seconds(3600))
            let authenticator = EdgeAuthenticator(verifier: accounts.accessTokens, view: view, store: store, maximumStaleness: 1, cacheCapacity: 16)

            // The view never heard from the feed: every decision needs the store.
            guard case .needsStore(let claims) = authenticator.authorizeFromMemory(bearer: session.accessToken, route: route, now: now) else {
                Issue.record("a stale view decided from memory")
                return
            }
            guard case .allow(let allowed) = await authenticator.checkStore(claims, route: route) else {
                Issue.record("a live session was refused by the store check")
                return
            }
            #expect(allowed?.sub == session.user.id)

            // The session ends in the store; the feed never tells this replica (the view is not fed).
            let sessionID = try #require(claims.sessionID)
            #expect(try await store.deleteSessions(userID: claims.sub, sessionIDs: [sessionID]) == [sessionID])
            guard case .unauthorized(let reason) = await authenticator.authorize(bearer: session.accessToken, route: route, now: now) else {
                Issue.record("a session deleted in the store passed a stale view")
                return
            }
            #expect(reason == "session_revoked")

            // A current view is trusted as it stands: the store is not asked (so the lost
            // revocation passes, which is exactly why staleness is bounded).
            view.markCurrent(at: now)
            guard case .decided(.allow) = authenticator.authorizeFromMemory(bearer: session.accessToken, route: route, now: now) else {
                Issue.record("a current view did not decide from memory")
                return
            }
        }
    }

    @Test("a look-alike of a cached token (U+212A KELVIN SIGN for a K) is refused, before and after the real one passes")
    func cachedTokenLookAlike() async throws {
        try await withService(.memory) { accounts, store in
            let route = try apiRoute()
            let now = Date()
            var access = ""
            for _ in 0..<20 where !access.contains("K") { access = try await accounts.signUpAnonymously(data: [:], now: now).accessToken }
            let lookAlike = try #require(TamperedToken.unicodeLookAlike(access))
            let view = RevocationView(retention: .seconds(3600))
            view.markCurrent(at: now)
            let authenticator = EdgeAuthenticator(verifier: accounts.accessTokens, view: view, store: store, maximumStaleness: 60, cacheCapacity: 16)
            func refused(_ token: String) async -> Bool {
                if case .unauthorized = await authenticator.authorize(bearer: token, route: route, now: now) { return true }
                return false
            }
            #expect(await refused(lookAlike))
            #expect(!(await refused(access)), "the real token passes (and is cached)")
            #expect(await refused(lookAlike), "the look-alike passed once the real token was cached")
        }
    }

    @Test("a stale view and a store that cannot answer: 503 (unavailable), never a pass")
    func storeDown() async throws {
        try await withService(.memory) { accounts, _ in
            let route = try apiRoute()
            let now = Date()
            let session = try await accounts.signUpAnonymously(data: [:], now: now)
            let port = try freeLoopbackPort()
            let redis = RedisClient(
                configuration: .init(
                    url: RedisURL(host: "127.0.0.1", port: port), poolSize: 1, connectTimeout: .milliseconds(200), commandTimeout: .milliseconds(500)),
                logger: Logger(label: "edge-authenticator-test"))
            let unreachable = RedisAuthStore(redis: redis, keyPrefix: "edge:")
            let authenticator = EdgeAuthenticator(
                verifier: accounts.accessTokens, view: RevocationView(retention: .seconds(60)), store: unreachable, maximumStaleness: 1,
                cacheCapacity: 16)
            let decision = await authenticator.authorize(bearer: session.accessToken, route: route, now: now)
            await redis.shutdown()
            guard case .unavailable = decision else {
                Issue.record("a store that cannot answer gave \(decision)")
                return
            }
        }
    }

    @Test("the proxy shares the GoTrue endpoints' verified-token cache: a token the replica minted is known at once; a key change empties it")
    func sharedCache() async throws {
        let keys = SigningKeys(try SigningKeyRing(validating: [SigningKey.generate(kid: "k1", algorithm: .es256)]))
        try await withService(.memory, keys: keys) { accounts, store in
            let route = try apiRoute()
            let now = Date()
            let authenticator = EdgeAuthenticator(
                accounts: accounts, view: RevocationView(retention: .seconds(3600)), store: store, maximumStaleness: nil)
            #expect(authenticator.cachedTokens == 0)
            let session = try await accounts.signUpAnonymously(data: [:], now: now)
            // Minted here: known to the proxy before it ever sees the token.
            #expect(authenticator.cachedTokens == 1)
            guard case .allow(let claims) = await authenticator.authorize(bearer: session.accessToken, route: route, now: now) else {
                Issue.record("a minted token was refused")
                return
            }
            #expect(claims?.sub == session.user.id)
            #expect(authenticator.cachedTokens == 1, "the proxy's request found the minted token")
            keys.replace(with: try SigningKeyRing(validating: [SigningKey.generate(kid: "k2", algorithm: .es256)]))
            #expect(authenticator.cachedTokens == 0)
            guard case .unauthorized = await authenticator.authorize(bearer: session.accessToken, route: route, now: now) else {
                Issue.record("a token of a removed key passed after the key change")
                return
            }
        }
    }
}
