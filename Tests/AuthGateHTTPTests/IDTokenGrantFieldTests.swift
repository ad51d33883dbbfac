import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import AuthGateHTTP

/// The id_token grant's optional fields, as GoTrue reads them (`internal/api/token_oidc.go`):
/// `access_token` against the ID token's `at_hash` (supabase-swift sends both for Google:
/// `signInWithIdToken(credentials: .init(provider: .google, idToken:, accessToken:))`), and
/// `issuer` with `client_id`, which select the provider when `provider` is empty and must match
/// an Apple token's `iss`.
@Suite("id_token grant: access_token, issuer and client_id", .timeLimit(.minutes(3)))
struct IDTokenGrantFieldTests {
    /// A gateway whose Apple provider and OIDC provider `corp` take tokens signed by `provider`.
    private struct Rig {
        let provider: FakeProvider
        let dependencies: GatewayApplication.Dependencies

        init(provider: FakeProvider) throws {
            self.provider = provider
            let configuration = try AuthGateConfiguration.parse(
                yaml: """
                    providers:
                      apple: { enabled: true, audiences: [com.example.app], jwks_url: "\(provider.jwksURL)" }
                      oidc: [ { name: corp, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
                    rate_limits: { token: off }
                    """,
                baseDirectory: "", environment: [:])
            let verifiers = IdentityVerifierRegistry(
                providers: configuration.providers, fetcher: HTTPJWKSFetcher(client: .shared), logger: .init(label: "id-token-grant"))
            dependencies = GatewayApplication.Dependencies(
                configuration: configuration, store: MemoryAuthStore(),
                keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true), verifiers: verifiers, providerHTTPClient: .shared)
        }

        /// A token of `issuer` (corp's by default) for `subject`, with `extra` claims.
        func idToken(_ subject: String, issuer: String? = nil, audience: String = "app", extra: [String: JSONValue] = [:]) -> String {
            var claims = FakeProvider.claims(
                issuer: issuer ?? provider.issuer, audience: audience, subject: subject,
                extra: ["jti": .string(UUID().uuidString), "email": .string("\(subject)@example.com")])
            claims.merge(extra) { _, new in new }
            return FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
        }
    }

    /// Posts `fields` as an id_token grant: the status and the JSON answer.
    private static func grant(_ client: some TestClientProtocol, _ fields: [String: JSONValue]) async throws -> (
        HTTPResponse.Status, [String: JSONValue]
    ) {
        try await client.execute(
            uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: JSONValue.object(fields).serialized())
        ) { response in
            (response.status, (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:])
        }
    }

    @Test("a matching access token signs in; another is 400 Bad ID token and leaves the ID token usable; none, or no at_hash, is not checked")
    func accessToken() async throws {
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let rig = try Rig(provider: provider)
        let bound = AccessTokenHashRule.hash("provider-access-1", algorithm: .rs256)
        try await Application(router: GatewayApplication.buildRouter(rig.dependencies)).test(.router) { client in
            func signIn(_ token: String, accessToken: JSONValue) async throws -> (HTTPResponse.Status, [String: JSONValue]) {
                try await Self.grant(client, ["provider": "corp", "id_token": .string(token), "access_token": accessToken])
            }
            let token = rig.idToken("s-1", extra: ["at_hash": .string(bound)])
            let stray = try await signIn(token, accessToken: "provider-access-2")
            #expect(stray.0 == .badRequest)
            #expect(stray.1 == ["error": "invalid request", "error_description": "Bad ID token"])
            // Refused before its single use was taken: the pair that belongs together still signs in.
            let matched = try await signIn(token, accessToken: "provider-access-1")
            #expect(matched.0 == .ok, "\(matched.1)")
            #expect(matched.1["user"]?.objectValue?["identities"]?.arrayValue?.count == 1)
            // No access token (absent, null or empty), or no at_hash: nothing to compare.
            #expect(try await signIn(rig.idToken("s-2", extra: ["at_hash": .string(bound)]), accessToken: .null).0 == .ok)
            #expect(try await signIn(rig.idToken("s-3", extra: ["at_hash": .string(bound)]), accessToken: "").0 == .ok)
            #expect(try await signIn(rig.idToken("s-4"), accessToken: "provider-access-9").0 == .ok)
            // An at_hash that is not a string: a token go-oidc cannot read.
            #expect(
                try await signIn(rig.idToken("s-5", extra: ["at_hash": .integer(7)]), accessToken: .null).1["error_description"] == "Bad ID token")
            // An access_token that is not a string: the body is refused as GoTrue refuses it.
            #expect(try await signIn(rig.idToken("s-6", extra: ["at_hash": .string(bound)]), accessToken: .integer(1)).0 == .badRequest)
            let users = try await rig.dependencies.store.listUsers(offset: 0, limit: 10)
            #expect(users.total == 4)
        }
        await provider.stop()
    }

    @Test("issuer and client_id select the provider when provider is empty; an Apple token's iss must be the issuer given; GoTrue's texts")
    func issuer() async throws {
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let rig = try Rig(provider: provider)
        try await Application(router: GatewayApplication.buildRouter(rig.dependencies)).test(.router) { client in
            // No provider: a client id and an issuer are both needed.
            let corp = rig.idToken("by-issuer")
            for fields: [String: JSONValue] in [["issuer": .string(provider.issuer)], ["client_id": "app"], [:]] {
                let answer = try await Self.grant(client, fields.merging(["id_token": .string(corp)]) { first, _ in first })
                #expect(answer.0 == .badRequest)
                #expect(answer.1["error_description"] == "provider or client_id and issuer required", "\(fields)")
            }
            let byIssuer = try await Self.grant(client, ["id_token": .string(corp), "client_id": "app", "issuer": .string(provider.issuer)])
            #expect(byIssuer.0 == .ok, "\(byIssuer.1)")
            #expect(byIssuer.1["user"]?.objectValue?["app_metadata"]?.objectValue?["provider"] == "corp")
            let unknownIssuer = try await Self.grant(
                client, ["id_token": .string(rig.idToken("x")), "client_id": "app", "issuer": "https://issuer.example"])
            #expect(unknownIssuer.0 == .badRequest)
            #expect(unknownIssuer.1["error_code"] == "validation_failed")
            #expect(unknownIssuer.1["msg"] == #"Custom OIDC provider "" not allowed"#)
            let unknownName = try await Self.grant(client, ["id_token": .string(rig.idToken("y")), "provider": "facebook"])
            #expect(unknownName.1["msg"] == #"Custom OIDC provider "facebook" not allowed"#)

            // Apple signs with either of its issuers; the one given must be the token's.
            let apple = rig.idToken("apple-1", issuer: "https://account.apple.com", audience: "com.example.app")
            let mismatched = try await Self.grant(client, ["id_token": .string(apple), "provider": "apple", "issuer": "https://appleid.apple.com"])
            #expect(mismatched.0 == .badRequest)
            #expect(mismatched.1["error_code"] == "validation_failed")
            #expect(mismatched.1["msg"] == "Provided issuer does not match ID token issuer")
            // Refused before its single use was taken; the right issuer (selecting Apple alone) signs in.
            let matched = try await Self.grant(client, ["id_token": .string(apple), "client_id": "x", "issuer": "https://account.apple.com"])
            #expect(matched.0 == .ok, "\(matched.1)")
            #expect(matched.1["user"]?.objectValue?["app_metadata"]?.objectValue?["provider"] == "apple")
        }
        await provider.stop()
    }
}
