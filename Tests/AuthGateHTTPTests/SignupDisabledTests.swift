import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import AuthGateHTTP

/// `users.disable_signup` (GoTrue's `GOTRUE_DISABLE_SIGNUP`): no new users, existing ones as before.
@Suite("users.disable_signup: existing users only", .timeLimit(.minutes(3)))
struct SignupDisabledTests {
    /// A gateway on `store` whose Apple provider and OIDC provider `corp` take tokens signed by
    /// `provider`, with anonymous sign-up on.
    private static func app(_ store: any AuthStore, provider: FakeProvider, disableSignup: Bool) throws -> (
        some ApplicationProtocol, GatewayApplication.Dependencies
    ) {
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers:
                  apple: { enabled: true, audiences: [com.example.app], jwks_url: "\(provider.jwksURL)" }
                  oidc: [ { name: corp, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
                  anonymous: { enabled: true }
                users: { disable_signup: \(disableSignup) }
                rate_limits: { token: off, signup: off }
                """,
            baseDirectory: "", environment: [:])
        let verifiers = IdentityVerifierRegistry(
            providers: configuration.providers, fetcher: HTTPJWKSFetcher(client: .shared), logger: .init(label: "signup-disabled"))
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: store, keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true),
            verifiers: verifiers, providerHTTPClient: .shared)
        return (Application(router: GatewayApplication.buildRouter(dependencies)), dependencies)
    }

    private static func token(_ provider: FakeProvider, subject: String, email: String, apple: Bool = false) -> String {
        FakeProvider.token(
            claims: FakeProvider.claims(
                issuer: apple ? "https://appleid.apple.com" : provider.issuer, audience: apple ? "com.example.app" : "app", subject: subject,
                extra: ["jti": .string(UUID().uuidString), "email": .string(email)]),
            key: FakeProvider.sharedKeys[0])
    }

    private static func post(_ client: some TestClientProtocol, _ uri: String, _ fields: [String: JSONValue]) async throws -> (
        HTTPResponse.Status, [String: JSONValue]
    ) {
        try await client.execute(
            uri: uri, method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(bytes: JSONValue.object(fields).serialized())
        ) { response in
            (response.status, (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:])
        }
    }

    @Test(
        "a new user is refused (id_token, anonymous sign-up: 422 signup_disabled); a returning user, and a verified email linking to its user, sign in",
        arguments: TestStoreKind.allCases)
    func existingUsersOnly(kind: TestStoreKind) async throws {
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        try await withTestStore(kind) { store in
            let signIn = "/auth/v1/token?grant_type=id_token"
            let (open, _) = try Self.app(store, provider: provider, disableSignup: false)
            let userID = try await open.test(.router) { client in
                let first = try await Self.post(
                    client, signIn, ["provider": "corp", "id_token": .string(Self.token(provider, subject: "u-1", email: "one@example.com"))])
                #expect(first.0 == .ok, "\(first.1)")
                return first.1["user"]?.objectValue?["id"]
            }
            let (closed, dependencies) = try Self.app(store, provider: provider, disableSignup: true)
            try await closed.test(.router) { client in
                let returning = try await Self.post(
                    client, signIn, ["provider": "corp", "id_token": .string(Self.token(provider, subject: "u-1", email: "one@example.com"))])
                #expect(returning.0 == .ok, "\(returning.1)")
                #expect(returning.1["user"]?.objectValue?["id"] == userID)
                // A new identity whose verified email is the user's links to it: not a sign-up.
                let linked = try await Self.post(
                    client, signIn,
                    ["provider": "apple", "id_token": .string(Self.token(provider, subject: "a-1", email: "one@example.com", apple: true))])
                #expect(linked.0 == .ok, "\(linked.1)")
                #expect(linked.1["user"]?.objectValue?["id"] == userID)
                #expect(linked.1["user"]?.objectValue?["identities"]?.arrayValue?.count == 2)

                let refused: [String: JSONValue] = ["code": 422, "error_code": "signup_disabled", "msg": "Signups not allowed for this instance"]
                let newUser = try await Self.post(
                    client, signIn, ["provider": "corp", "id_token": .string(Self.token(provider, subject: "u-2", email: "two@example.com"))])
                #expect(newUser.0 == .unprocessableContent)
                #expect(newUser.1 == refused)
                let anonymous = try await Self.post(client, "/auth/v1/signup", ["data": .object([:])])
                #expect(anonymous.0 == .unprocessableContent)
                #expect(anonymous.1 == refused)
                try await client.execute(uri: "/auth/v1/settings", method: .get) { response in
                    let settings = try JSONValue.parse(Array(response.body.readableBytesView)).objectValue
                    #expect(settings?["disable_signup"] == true)
                }
                #expect(try await dependencies.store.listUsers(offset: 0, limit: 10).total == 1)
            }
        }
        await provider.stop()
    }

    /// A token with `role` for the operator, signed by the gateway's key.
    private static func adminToken(_ dependencies: GatewayApplication.Dependencies, role: String = "service_role") throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let tokens = dependencies.configuration.tokens
        return try AccessTokenIssuer(keys: try #require(dependencies.signingKeys)).mint(
            AccessTokenClaims(
                iss: tokens.issuer, sub: "operator", aud: tokens.audience, exp: now + 600, iat: now, email: "", phone: "", appMetadata: [:],
                userMetadata: [:], role: role, aal: "aal1", amr: [], sessionID: nil, isAnonymous: false))
    }

    @Test(
        "an invitation: an operator creates a user by email (POST /admin/users), and with sign-ups closed the first sign-in whose provider vouches for that email joins it",
        arguments: TestStoreKind.allCases)
    func invitation(kind: TestStoreKind) async throws {
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        try await withTestStore(kind) { store in
            let (app, dependencies) = try Self.app(store, provider: provider, disableSignup: true)
            let admin = try Self.adminToken(dependencies)
            try await app.test(.router) { client in
                func create(_ fields: [String: JSONValue], token: String? = nil) async throws -> (HTTPResponse.Status, [String: JSONValue]) {
                    try await client.execute(
                        uri: "/auth/v1/admin/users", method: .post,
                        headers: [.contentType: "application/json", .authorization: "Bearer \(token ?? admin)"],
                        body: ByteBuffer(bytes: JSONValue.object(fields).serialized())
                    ) { response in
                        (response.status, (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:])
                    }
                }
                let created = try await create(
                    ["email": "Invitee@Example.com", "email_confirm": true, "user_metadata": .object(["team": "a"]), "role": "authenticated"])
                #expect(created.0 == .ok, "\(created.1)")
                let userID = try #require(created.1["id"]?.stringValue)
                #expect(created.1["email"] == "invitee@example.com")
                #expect(created.1["email_confirmed_at"]?.stringValue != nil)
                #expect(created.1["identities"] == .array([]))
                #expect(created.1["is_anonymous"] == false)
                #expect(created.1["user_metadata"]?.objectValue?["team"] == "a")

                // Refused before anything is written.
                let refusals: [([String: JSONValue], HTTPResponse.Status, String)] = [
                    (["email": "invitee@example.com"], .unprocessableContent, "email_exists"),
                    ([:], .badRequest, "validation_failed"),
                    (["email": "not an email"], .badRequest, "validation_failed"),
                    (["email": "a@b.c", "password": "hunter2"], .badRequest, "validation_failed"),
                    (["email": "a@b.c", "phone": "+15550100"], .badRequest, "validation_failed"),
                    (["email": "a@b.c", "role": "a b"], .badRequest, "validation_failed"),
                    (["email": "a@b.c", "ban_duration": "9999999999999999h"], .badRequest, "validation_failed"),
                    (
                        ["email": "a@b.c", "user_metadata": .object(["x": .string(String(repeating: "x", count: 20_000))])], .badRequest,
                        "validation_failed"
                    )
                ]
                for (fields, status, code) in refusals {
                    let answer = try await create(fields)
                    #expect(answer.0 == status, "\(fields)")
                    #expect(answer.1["error_code"]?.stringValue == code, "\(fields): \(answer.1)")
                }
                #expect(try await create(["email": "b@b.c"], token: try Self.adminToken(dependencies, role: "authenticated")).0 == .forbidden)

                let joined = try await Self.post(
                    client, "/auth/v1/token?grant_type=id_token",
                    ["provider": "corp", "id_token": .string(Self.token(provider, subject: "inv-1", email: "invitee@example.com"))])
                #expect(joined.0 == .ok, "\(joined.1)")
                #expect(joined.1["user"]?.objectValue?["id"]?.stringValue == userID)
                #expect(joined.1["user"]?.objectValue?["identities"]?.arrayValue?.count == 1)
                #expect(joined.1["user"]?.objectValue?["app_metadata"]?.objectValue?["provider"] == "corp")
                let uninvited = try await Self.post(
                    client, "/auth/v1/token?grant_type=id_token",
                    ["provider": "corp", "id_token": .string(Self.token(provider, subject: "inv-2", email: "stranger@example.com"))])
                #expect(uninvited.0 == .unprocessableContent)
                #expect(try await dependencies.store.listUsers(offset: 0, limit: 10).total == 1)
            }
        }
        await provider.stop()
    }
}
