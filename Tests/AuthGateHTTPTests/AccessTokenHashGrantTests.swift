import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import AuthGateHTTP

/// GoTrue checks an ID token's `at_hash` against the `access_token` sent beside it
/// (supabase-swift sends both for Google: `signInWithIdToken(credentials: .init(provider: .google,
/// idToken:, accessToken:))`); a pair that does not belong together is "Bad ID token".
@Suite("id_token grant: at_hash and the access token sent with it", .timeLimit(.minutes(3)))
struct AccessTokenHashGrantTests {
    @Test("a matching access token signs in; another is 400 Bad ID token and leaves the ID token usable; none, or no at_hash, is not checked")
    func grant() async throws {
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers: { oidc: [ { name: corp, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ] }
                rate_limits: { token: off }
                """,
            baseDirectory: "", environment: [:])
        let verifiers = IdentityVerifierRegistry(
            providers: configuration.providers, fetcher: HTTPJWKSFetcher(client: .shared), logger: .init(label: "at-hash"))
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: MemoryAuthStore(), keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true),
            verifiers: verifiers, providerHTTPClient: .shared)
        @Sendable func idToken(_ subject: String, atHash: JSONValue?) -> String {
            var extra: [String: JSONValue] = ["jti": .string(UUID().uuidString), "email": .string("\(subject)@example.com")]
            if let atHash { extra["at_hash"] = atHash }
            return FakeProvider.token(
                claims: FakeProvider.claims(issuer: provider.issuer, audience: "app", subject: subject, extra: extra), key: FakeProvider.sharedKeys[0]
            )
        }
        let bound = AccessTokenHashRule.hash("provider-access-1", algorithm: .rs256)
        try await Application(router: GatewayApplication.buildRouter(dependencies)).test(.router) { client in
            func signIn(_ token: String, accessToken: JSONValue) async throws -> (HTTPResponse.Status, [String: JSONValue]) {
                let body = JSONValue.object(["provider": "corp", "id_token": .string(token), "access_token": accessToken]).serialized()
                return try await client.execute(
                    uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(bytes: body)
                ) { response in
                    (response.status, (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:])
                }
            }
            let token = idToken("s-1", atHash: .string(bound))
            let stray = try await signIn(token, accessToken: "provider-access-2")
            #expect(stray.0 == .badRequest)
            #expect(stray.1 == ["error": "invalid request", "error_description": "Bad ID token"])
            // Refused before its single use was taken: the pair that belongs together still signs in.
            let matched = try await signIn(token, accessToken: "provider-access-1")
            #expect(matched.0 == .ok, "\(matched.1)")
            #expect(matched.1["user"]?.objectValue?["identities"]?.arrayValue?.count == 1)
            // No access token (absent, null or empty), or no at_hash: nothing to compare.
            #expect(try await signIn(idToken("s-2", atHash: .string(bound)), accessToken: .null).0 == .ok)
            #expect(try await signIn(idToken("s-3", atHash: .string(bound)), accessToken: "").0 == .ok)
            #expect(try await signIn(idToken("s-4", atHash: nil), accessToken: "provider-access-9").0 == .ok)
            // An at_hash that is not a string: a token go-oidc cannot read.
            #expect(try await signIn(idToken("s-5", atHash: .integer(7)), accessToken: .null).1["error_description"] == "Bad ID token")
            // An access_token that is not a string: the body is refused as GoTrue refuses it.
            #expect(try await signIn(idToken("s-6", atHash: .string(bound)), accessToken: .integer(1)).0 == .badRequest)
            let users = try await dependencies.store.listUsers(offset: 0, limit: 10)
            #expect(users.total == 4)
        }
        await provider.stop()
    }
}
