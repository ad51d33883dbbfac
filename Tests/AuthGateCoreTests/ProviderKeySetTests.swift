import AsyncHTTPClient
import AuthGateTestSupport
import Foundation
import Logging
import Testing

@testable import AuthGateCore

/// Provider key sets against a local fake provider serving a JWKS over real HTTP.
@Suite("Provider key sets against a local JWKS server", .serialized, .timeLimit(.minutes(3)))
struct ProviderKeySetTests {
    private static let logger = Logger(label: "keyset-test")

    /// Runs `body` with a started fake provider, an HTTP client, and a verifier for it; its key set
    /// reads discovery documents through `discovery`, made on the client's fetcher, when given.
    private func withProvider(
        keys: [FakeProvider.Key],
        source: ((FakeProvider) -> ProviderKeySet.Source)? = nil,
        discovery: ((any JWKSFetching) -> OIDCDiscovery)? = nil,
        minimumLifetime: Duration = .seconds(30),
        _ body: (FakeProvider, OIDCVerifier) async throws -> Void
    ) async throws {
        let provider = try await FakeProvider.start(keys: keys)
        let client = HTTPClientService.makeKeyFetchingClient()
        let configuration = try #require(
            try AuthGateConfiguration.parse(
                yaml: "providers: { oidc: [ { name: fake, issuer: \"\(provider.issuer)\", audiences: [app], jwks_url: \"\(provider.jwksURL)\" } ] }",
                baseDirectory: "",
                environment: [:]
            ).providers.oidc.first
        )
        let fetcher = HTTPJWKSFetcher(client: client)
        let keySet = ProviderKeySet(
            provider: "fake",
            source: source?(provider) ?? .url(provider.jwksURL),
            algorithm: .rs256,
            fetcher: fetcher,
            discovery: discovery?(fetcher),
            logger: Self.logger,
            minimumLifetime: minimumLifetime
        )
        let verifier = OIDCVerifier(configuration: configuration, keySet: keySet)
        do {
            try await body(provider, verifier)
        } catch {
            try? await client.shutdown()
            await provider.stop()
            throw error
        }
        try await client.shutdown()
        await provider.stop()
    }

    private func token(_ provider: FakeProvider, key: FakeProvider.Key, kid: String? = nil, extra: [String: JSONValue] = [:]) -> String {
        FakeProvider.token(claims: FakeProvider.claims(issuer: provider.issuer, audience: "app", extra: extra), key: key, kid: kid)
    }

    private func code(_ body: () async throws -> VerifiedIdentity) async -> AuthGateError.Code? {
        do {
            _ = try await body()
            return nil
        } catch {
            return (error as? AuthGateError)?.code
        }
    }

    /// Found by fuzzing (FuzzJWKSet): the key set was read with Foundation's JSON decoder, which
    /// let through a raw NUL inside a string that the gateway's own reader refuses. Key sets and
    /// discovery documents now go through the one strict reader.
    @Test("a key set the strict JSON reader refuses (raw NUL in a string, duplicate names) is not a key set")
    func strictKeySetDocuments() throws {
        let key = try #require(FakeProvider.sharedKeys.first)
        let good = FakeProvider.jwks([key])
        #expect(try JWKSetParser.parse(Array(good.utf8), algorithm: .rs256).keys.count == 1)
        let withNUL = good.replacingOccurrences(of: "\"kid\":\"", with: "\"kid\":\"\u{0}")
        #expect(withNUL != good)
        #expect(throws: AuthGateError.self) { try JWKSetParser.parse(Array(withNUL.utf8), algorithm: .rs256) }
        let duplicated = good.replacingOccurrences(of: "{\"keys\":", with: "{\"keys\":[],\"keys\":")
        #expect(duplicated != good)
        #expect(throws: AuthGateError.self) { try JWKSetParser.parse(Array(duplicated.utf8), algorithm: .rs256) }
    }

    @Test("a token signed by a published key verifies; the set is fetched once")
    func basicVerification() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            let identity = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(identity.subject == "user-1")
            #expect(identity.email == "person@example.com")
            #expect(identity.emailVerified)
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(provider.jwksRequests == 1)
        }
    }

    @Test("key rotation: a new kid appears, one refetch, accepted")
    func rotation() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            provider.publish([keys[0], keys[1]])
            let identity = try await verifier.verify(idToken: token(provider, key: keys[1]), rawNonce: nil, now: Date())
            #expect(identity.subject == "user-1")
            #expect(provider.jwksRequests == 2)
        }
    }

    @Test("a flood of unknown kids costs at most one fetch per 30 s, and concurrent misses share it")
    func unknownKidFlood() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(provider.jwksRequests == 1)
            let codes = await withTaskGroup(of: AuthGateError.Code?.self) { group in
                for index in 0..<200 {
                    let junk = token(provider, key: keys[2], kid: "junk-\(index)")
                    group.addTask { await code { try await verifier.verify(idToken: junk, rawNonce: nil, now: Date()) } }
                }
                return await group.reduce(into: [AuthGateError.Code?]()) { $0.append($1) }
            }
            #expect(codes.allSatisfy { $0 == .unknownKeyID })
            #expect(provider.jwksRequests == 2, "200 unknown kids must cause one refetch, not \(provider.jwksRequests - 1)")
            // A real new key published now is not fetched until the interval has passed...
            provider.publish([keys[0], keys[1]])
            #expect(await code { try await verifier.verify(idToken: token(provider, key: keys[1]), rawNonce: nil, now: Date()) } == .unknownKeyID)
            #expect(provider.jwksRequests == 2)
            // ...while known keys keep working without any fetch.
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(provider.jwksRequests == 2)
        }
    }

    @Test("JWKS server down: the last good set is still used, and staleness is reported")
    func serverDownKeepsLastGoodSet() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]], minimumLifetime: .zero) { provider, verifier in
            provider.setCaching(cacheControl: "max-age=0")
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            provider.setDown(true)
            await #expect(throws: AuthGateError.self) { try await verifier.keySet.refresh() }
            let identity = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(identity.subject == "user-1")
            let status = await verifier.keySet.status()
            #expect(status.keyCount == 1)
            #expect(status.isStale)
            #expect(status.lastError?.contains("503") == true)
        }
    }

    /// Every lookup used to start a fetch while no set had ever loaded: each sign-in while the
    /// provider could not be reached was a request to it and a warning line.
    @Test("fresh start with the JWKS server down: every token is rejected (fail closed), a flood costs one fetch, and the set loads once it is back")
    func freshStartServerDown() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            provider.setDown(true)
            for _ in 0..<100 {
                #expect(
                    await code { try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date()) } == .keysUnavailable)
            }
            let concurrent = await withTaskGroup(of: AuthGateError.Code?.self) { group in
                for _ in 0..<100 {
                    let signedIn = token(provider, key: keys[0])
                    group.addTask { await code { try await verifier.verify(idToken: signedIn, rawNonce: nil, now: Date()) } }
                }
                return await group.reduce(into: [AuthGateError.Code?]()) { $0.append($1) }
            }
            #expect(concurrent.allSatisfy { $0 == .keysUnavailable })
            // One fetch, or two if the flood outlasted the 2 s backoff on a slow machine.
            #expect(provider.jwksRequests <= 2, "\(provider.jwksRequests) fetches for 200 sign-ins")
            #expect(await verifier.keySet.status().lastError?.contains("503") == true)
            provider.setDown(false)
            try await waitUntil("the key set loads after the backoff", deadline: .seconds(10)) {
                await code { try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date()) } == nil
            }
            #expect(await verifier.keySet.status().keyCount == 1)
        }
    }

    /// The client retried a refused connection until its connect timeout (5 s in production):
    /// sign-ins waiting on the fetch waited that long for a failure known at once.
    @Test("a provider that refuses connections: the fetch fails at once, not after the client's connect timeout (the key set's backoff retries)")
    func refusedConnection() async throws {
        let client = HTTPClientService.makeKeyFetchingClient(connectTimeout: .seconds(60))
        let port = try freeLoopbackPort()
        let started = ContinuousClock.now
        do {
            _ = try await HTTPJWKSFetcher(client: client, timeout: .seconds(60)).fetch("http://127.0.0.1:\(port)/jwks")
            Issue.record("a fetch from a closed port succeeded")
        } catch let error as AuthGateError {
            #expect(error.code == .keysUnavailable)
            #expect(error.message.contains("refused"), "\(error.message)")
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(30), "the fetch took \(elapsed): retried until the 60 s timeouts")
        try await client.shutdown()
    }

    /// AsyncHTTPClient followed redirects itself, from https to http too: a key set fetched over
    /// TLS could be taken from a plain connection, as could an https issuer's discovered keys.
    @Test("redirects: a few followed, never from https to http; an https issuer's discovered jwks_uri must be https")
    func redirects() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, _ in
            let client = HTTPClientService.makeKeyFetchingClient()
            let fetcher = HTTPJWKSFetcher(client: client)
            let moved = try await fetcher.fetch(provider.issuer + "/moved")
            #expect(String(decoding: moved.body, as: UTF8.self).contains(keys[0].kid))
            let loop = await #expect(throws: AuthGateError.self) { try await fetcher.fetch(provider.issuer + "/loop") }
            #expect(loop?.message.contains("more than 3 times") == true, "\(String(describing: loop))")
            try await client.shutdown()
        }
        let tls = "https://keys.example.com:8443/a/jwks"
        #expect(HTTPJWKSFetcher.redirectTarget("https://other.example/jwks", from: tls) == "https://other.example/jwks")
        #expect(HTTPJWKSFetcher.redirectTarget("/b/jwks", from: tls) == "https://keys.example.com:8443/b/jwks")
        #expect(HTTPJWKSFetcher.redirectTarget("/b/jwks", from: "https://keys.example.com") == "https://keys.example.com/b/jwks")
        #expect(HTTPJWKSFetcher.redirectTarget("/b/jwks", from: "https://keys.example.com?format=jwks") == "https://keys.example.com/b/jwks")
        #expect(HTTPJWKSFetcher.redirectTarget("/b/jwks#x", from: tls) == nil)
        #expect(HTTPJWKSFetcher.redirectTarget("http://127.0.0.1:9/jwks", from: "http://127.0.0.1:8/jwks") == "http://127.0.0.1:9/jwks")
        #expect(HTTPJWKSFetcher.redirectTarget("https://127.0.0.1:9/jwks", from: "http://127.0.0.1:8/jwks") == "https://127.0.0.1:9/jwks")
        for location in [
            "http://keys.example.com/jwks", "HTTP://keys.example.com/jwks", "//evil.example/jwks", "jwks", "../jwks", "", "ftp://x/y",
            "http+unix://%2Fvar%2Frun%2Fdocker.sock/x", "https://a.example/\r\nX: y", "https://a.example/ü"
        ] {
            #expect(HTTPJWKSFetcher.redirectTarget(location, from: tls) == nil, "\(location)")
        }
        #expect(
            try OIDCDiscoveryDocument.usableURL(
                "https://keys.example/jwks", named: "jwks_uri", issuer: "https://issuer.example", failure: .keysUnavailable)
                == "https://keys.example/jwks")
        #expect(
            try OIDCDiscoveryDocument.usableURL("http://127.0.0.1:8/jwks", named: "jwks_uri", issuer: "http://127.0.0.1:8", failure: .keysUnavailable)
                == "http://127.0.0.1:8/jwks")
        #expect(throws: AuthGateError.self) {
            try OIDCDiscoveryDocument.usableURL(
                "http://keys.example/jwks", named: "jwks_uri", issuer: "https://issuer.example", failure: .keysUnavailable)
        }
        #expect(throws: AuthGateError.self) {
            try OIDCDiscoveryDocument.usableURL(nil, named: "jwks_uri", issuer: "https://issuer.example", failure: .keysUnavailable)
        }
        #expect(throws: AuthGateError.self) {
            try OIDCDiscoveryDocument.usableURL(
                "https://u:p@keys.example/jwks", named: "jwks_uri", issuer: "https://issuer.example", failure: .keysUnavailable)
        }
        #expect(HTTPJWKSFetcher.redirectTarget("https://u:p@keys.example/jwks", from: tls) == nil)
        #expect(HTTPJWKSFetcher.redirectTarget("HTTPS://keys.example/jwks", from: tls) == "https://keys.example/jwks")
        // A provider API answering a redirect: tried again later, not taken as a refusal of the token.
        let redirected = ProviderFormPost.Answer(status: 307, body: [], errorCode: nil)
        let refusal = #expect(throws: AuthGateError.self) { try redirected.requireSuccess("apple revoke") }
        #expect(refusal?.code == .providerUnavailable)
    }

    @Test("Cache-Control max-age minus Age sets how long the set stays fresh")
    func cacheControl() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            provider.setCaching(cacheControl: "public, max-age=21155, must-revalidate, no-transform", age: "155")
            try await verifier.keySet.refresh()
            let fresh = try #require(await verifier.keySet.status().freshForSeconds)
            #expect(fresh > 20_990 && fresh <= 21_000)
            #expect(await verifier.keySet.status().isStale == false)
        }
        #expect(FetchedDocument.maxAge(cacheControl: "no-store", age: nil) == .zero)
        #expect(FetchedDocument.maxAge(cacheControl: "public", age: nil) == nil)
        #expect(FetchedDocument.maxAge(cacheControl: "max-age=\"60\"", age: "100") == .zero)
        // A sign is not part of a number here: the directive is not read, nor is such an Age.
        #expect(FetchedDocument.maxAge(cacheControl: "max-age=+60", age: nil) == nil)
        #expect(FetchedDocument.maxAge(cacheControl: "max-age=60", age: "+10") == .seconds(60))
        #expect(FetchedDocument.maxAge(cacheControl: "max-age=60", age: "10") == .seconds(50))
    }

    @Test("a JWKS with an oct key, an enc key and junk still loads its RSA keys")
    func skipsUnusableKeys() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            provider.addRawEntries([
                "{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}",
                "{\"kty\":\"RSA\",\"kid\":\"enc\",\"use\":\"enc\",\"n\":\"AQAB\",\"e\":\"AQAB\"}",
                "{\"kty\":\"EC\",\"kid\":\"odd-curve\",\"crv\":\"P-521\",\"x\":\"AA\",\"y\":\"AA\"}",
                "{\"kty\":\"RSA\",\"kid\":\"tiny\",\"n\":\"AQAB\",\"e\":\"AQAB\"}",
                "\"not an object\""
            ])
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(await verifier.keySet.status().keyCount == 1)
            let hmacToken = FakeProvider.unsignedToken(
                header: ["alg": "RS256", "kid": "hmac"], claims: FakeProvider.claims(issuer: provider.issuer, audience: "app"))
            #expect(await code { try await verifier.verify(idToken: hmacToken, rawNonce: nil, now: Date()) } == .unknownKeyID)
        }
    }

    @Test("a junk PS512 token does not break later RS256 tokens (no algorithm pinning by tokens)")
    func junkAlgorithmToken() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            let junk = FakeProvider.token(claims: FakeProvider.claims(issuer: provider.issuer, audience: "app"), key: keys[0], algorithm: "PS512")
            #expect(await code { try await verifier.verify(idToken: junk, rawNonce: nil, now: Date()) } == .algorithmNotAllowed)
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
        }
    }

    @Test("alg none, HMAC algs, a missing kid and a non-JWS are rejected with their reasons")
    func hostileHeaders() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            let claims = FakeProvider.claims(issuer: provider.issuer, audience: "app")
            let none = FakeProvider.unsignedToken(header: ["alg": "none", "kid": .string(keys[0].kid)], claims: claims, signature: [0])
            let hmac = FakeProvider.unsignedToken(header: ["alg": "HS256", "kid": .string(keys[0].kid)], claims: claims)
            let noKid = FakeProvider.token(claims: claims, key: keys[0], kid: "")
            #expect(await code { try await verifier.verify(idToken: none, rawNonce: nil, now: Date()) } == .algorithmNotAllowed)
            #expect(await code { try await verifier.verify(idToken: hmac, rawNonce: nil, now: Date()) } == .algorithmNotAllowed)
            #expect(await code { try await verifier.verify(idToken: noKid, rawNonce: nil, now: Date()) } == .missingKeyID)
            #expect(await code { try await verifier.verify(idToken: "not.a.jwt", rawNonce: nil, now: Date()) } == .malformed)
            #expect(await code { try await verifier.verify(idToken: "", rawNonce: nil, now: Date()) } == .malformed)
            #expect(provider.jwksRequests <= 1, "rejected headers must not trigger fetches")
        }
    }

    @Test("claims: issuer, audience list, exp, nbf, iat and sub are checked, with leeway")
    func claimChecks() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            let now = Date()
            let issued = Int64(now.timeIntervalSince1970)
            func sign(_ changes: [String: JSONValue], removing: [String] = []) -> String {
                var claims = FakeProvider.claims(issuer: provider.issuer, audience: "app", now: now)
                claims.merge(changes) { _, new in new }
                for name in removing { claims.removeValue(forKey: name) }
                return FakeProvider.token(claims: claims, key: keys[0])
            }
            #expect(await code { try await verifier.verify(idToken: sign(["iss": "https://evil.example"]), rawNonce: nil, now: now) } == .issuer)
            #expect(await code { try await verifier.verify(idToken: sign(["aud": .array(["x", "y"])]), rawNonce: nil, now: now) } == .audience)
            _ = try await verifier.verify(idToken: sign(["aud": .array(["x", "app"])]), rawNonce: nil, now: now)
            #expect(await code { try await verifier.verify(idToken: sign([:], removing: ["exp"]), rawNonce: nil, now: now) } == .expired)
            #expect(await code { try await verifier.verify(idToken: sign(["exp": .integer(issued)]), rawNonce: nil, now: now) } == .expired)
            // nbf and iat may be up to clock_skew (60 s by default) ahead; exp has no leeway by default.
            _ = try await verifier.verify(idToken: sign(["nbf": .integer(issued + 60), "iat": .integer(issued + 60)]), rawNonce: nil, now: now)
            #expect(await code { try await verifier.verify(idToken: sign(["nbf": .integer(issued + 61)]), rawNonce: nil, now: now) } == .notYetValid)
            #expect(
                await code { try await verifier.verify(idToken: sign(["iat": .integer(issued + 61)]), rawNonce: nil, now: now) } == .issuedInFuture)
            #expect(await code { try await verifier.verify(idToken: sign(["sub": ""]), rawNonce: nil, now: now) } == .missingSubject)
            #expect(await code { try await verifier.verify(idToken: sign([:], removing: ["sub"]), rawNonce: nil, now: now) } == .missingSubject)
            var lenient = verifier.configuration
            lenient.leeway = .seconds(120)
            let tolerant = OIDCVerifier(configuration: lenient, keySet: verifier.keySet)
            _ = try await tolerant.verify(idToken: sign(["nbf": .integer(issued + 120), "iat": .integer(issued + 120)]), rawNonce: nil, now: now)
            _ = try await tolerant.verify(idToken: sign(["exp": .integer(issued - 60)]), rawNonce: nil, now: now)
        }
    }

    @Test("issuer and audience are matched byte for byte: a canonically equivalent spelling is refused")
    func lookAlikeIssuerAndAudience() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]]) { provider, verifier in
            let now = Date()
            var configuration = verifier.configuration
            configuration.audiences = ["app-K"]
            configuration.issuers = [provider.issuer + "/K"]
            let strict = OIDCVerifier(configuration: configuration, keySet: verifier.keySet)
            func sign(issuer: String, audience: String) -> String {
                FakeProvider.token(claims: FakeProvider.claims(issuer: issuer, audience: audience, now: now), key: keys[0])
            }
            #expect("K" == "\u{212A}", "the trap: Swift calls these equal")
            _ = try await strict.verify(idToken: sign(issuer: provider.issuer + "/K", audience: "app-K"), rawNonce: nil, now: now)
            #expect(
                await code {
                    try await strict.verify(idToken: sign(issuer: provider.issuer + "/K", audience: "app-\u{212A}"), rawNonce: nil, now: now)
                }
                    == .audience)
            #expect(
                await code {
                    try await strict.verify(idToken: sign(issuer: provider.issuer + "/\u{212A}", audience: "app-K"), rawNonce: nil, now: now)
                }
                    == .issuer)
        }
    }

    @Test("OIDC discovery finds the JWKS through /.well-known/openid-configuration")
    func discovery() async throws {
        let keys = FakeProvider.sharedKeys
        try await withProvider(keys: [keys[0]], source: { .discovery(issuer: $0.issuer) }) { provider, verifier in
            let identity = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(identity.subject == "user-1")
        }
    }

    @Test(
        "a key set found by discovery refetches its keys without refetching the document while it is fresh, and from the jwks_uri last read while the discovery endpoint is down"
    )
    func discoveryDocumentIsKept() async throws {
        let keys = FakeProvider.sharedKeys
        let clock = ManualClock()
        var shared: OIDCDiscovery?
        let makeDiscovery = { (fetcher: any JWKSFetching) -> OIDCDiscovery in
            let discovery = OIDCDiscovery(fetcher: fetcher, now: { clock.now })
            shared = discovery
            return discovery
        }
        try await withProvider(keys: [keys[0]], source: { .discovery(issuer: $0.issuer) }, discovery: makeDiscovery) { provider, verifier in
            let discovery = try #require(shared)
            provider.setEndpoints(authorization: provider.issuer + "/authorize", token: provider.issuer + "/token")
            _ = try await verifier.verify(idToken: token(provider, key: keys[0]), rawNonce: nil, now: Date())
            #expect(provider.discoveryRequests == 1)
            #expect(provider.jwksRequests == 1)
            // The browser flow reads the same document: no second fetch.
            #expect(try await discovery.endpoints(issuer: provider.issuer).token == provider.issuer + "/token")
            #expect(provider.discoveryRequests == 1)
            // A rotation: the keys are refetched, the document is not.
            provider.publish([keys[0], keys[1]])
            _ = try await verifier.verify(idToken: token(provider, key: keys[1]), rawNonce: nil, now: Date())
            #expect(provider.jwksRequests == 2)
            #expect(provider.discoveryRequests == 1)
            // The document's hour runs out while its endpoint is down: the next refresh tries it once,
            // then fetches the keys from the jwks_uri it last named.
            clock.advance(.seconds(3601))
            provider.setDiscoveryDown(true)
            provider.publish([keys[0], keys[1], keys[2]])
            try await verifier.keySet.refresh()
            #expect(provider.discoveryRequests == 2)
            #expect(provider.jwksRequests == 3)
            _ = try await verifier.verify(idToken: token(provider, key: keys[2]), rawNonce: nil, now: Date())
            #expect(provider.jwksRequests == 3)
        }
    }
}
