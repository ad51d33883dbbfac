import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import AuthGateHTTP

/// `POST /auth/v1/apple/notifications` end to end, with a local fake Apple publishing the keys.
@Suite("Apple notifications endpoint", .timeLimit(.minutes(3)))
struct AppleNotificationEndpointTests {
    static let audience = "com.example.app"

    private func idToken(_ subject: String, key: FakeProvider.Key) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return FakeProvider.token(
            claims: [
                "iss": "https://appleid.apple.com", "aud": .string(Self.audience), "sub": .string(subject), "iat": .integer(now),
                "exp": .integer(now + 600),
                "email": .string("\(subject)@privaterelay.appleid.com"), "email_verified": "true", "jti": .string(UUID().uuidString)
            ],
            key: key
        )
    }

    private func notification(_ type: String, subject: String, key: FakeProvider.Key, audience: String = audience) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let events = "{\"type\":\"\(type)\",\"sub\":\"\(subject)\",\"event_time\":\(now * 1000)}"
        return FakeProvider.token(
            claims: [
                "iss": "https://appleid.apple.com", "aud": .string(audience), "iat": .integer(now), "exp": .integer(now + 600),
                "jti": .string(UUID().uuidString), "events": .string(events)
            ],
            key: key
        )
    }

    @Test("consent-revoked ends the user's sessions on the proxy at once; a replay and a tampered payload get 400 and change nothing")
    func consentRevoked() async throws {
        let key = FakeProvider.sharedKeys[0]
        let apple = try await FakeProvider.start(keys: [key])
        let upstream = try await EchoUpstream.start()
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers: { apple: { enabled: true, audiences: [\(Self.audience)], jwks_url: "\(apple.jwksURL)" } }
                rate_limits: { token: off, signup: off, nonce: off }
                routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required } ]
                """,
            baseDirectory: "", environment: [:]
        )
        let connections = UpstreamConnectionPool(maxConnectionsPerUpstream: 8)
        let verifiers = IdentityVerifierRegistry(
            providers: configuration.providers, fetcher: HTTPJWKSFetcher(client: .shared), logger: .init(label: "apple-e2e"))
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: MemoryAuthStore(), keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true),
            verifiers: verifiers, upstreamConnections: connections
        )
        let app = Application(router: GatewayApplication.buildRouter(dependencies), server: GatewayApplication.serverBuilder(dependencies))
        @Sendable func signIn(_ client: some TestClientProtocol, _ subject: String) async throws -> String {
            try await client.execute(
                uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"provider\":\"apple\",\"id_token\":\"\(idToken(subject, key: key))\"}")
            ) { response in
                try #require(
                    try JSONValue.parse(Array(response.body.readableBytesView)).objectValue?["access_token"]?.stringValue,
                    "\(String(buffer: response.body))")
            }
        }
        @Sendable func post(_ client: some TestClientProtocol, _ payload: String) async throws -> HTTPResponse.Status {
            try await client.execute(
                uri: "/auth/v1/apple/notifications", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"payload\":\"\(payload)\"}")
            ) { $0.status }
        }
        @Sendable func proxy(_ client: some TestClientProtocol, _ token: String) async throws -> HTTPResponse.Status {
            try await client.execute(uri: "/api/x", method: .get, headers: [.authorization: "Bearer \(token)"]) { $0.status }
        }
        try await app.test(.live) { client in
            let first = try await signIn(client, "001.apple.alice")
            let second = try await signIn(client, "001.apple.alice")
            let bob = try await signIn(client, "001.apple.bob")
            #expect(try await proxy(client, first) == .ok)

            let tampered = TamperedToken.signatureChanged(notification("consent-revoked", subject: "001.apple.bob", key: key))
            #expect(try await post(client, tampered) == .badRequest)
            #expect(try await post(client, notification("consent-revoked", subject: "001.apple.bob", key: key, audience: "com.other")) == .badRequest)
            #expect(try await post(client, "not-a-jws") == .badRequest)
            #expect(try await proxy(client, bob) == .ok, "a refused notification changes nothing")

            let revoke = notification("consent-revoked", subject: "001.apple.alice", key: key)
            #expect(try await post(client, revoke) == .ok)
            #expect(try await proxy(client, first) == .unauthorized)
            #expect(try await proxy(client, second) == .unauthorized)
            #expect(try await proxy(client, bob) == .ok, "another user's sessions are untouched")
            #expect(try await post(client, revoke) == .badRequest, "a replayed notification is refused")
            #expect(
                try await post(client, notification("some-future-event", subject: "001.apple.bob", key: key)) == .ok,
                "unknown events are acknowledged")

            let store = dependencies.store
            let alice = try #require(try await store.owner(ofIdentity: "apple", subject: "001.apple.alice"))
            #expect(try await post(client, notification("email-disabled", subject: "001.apple.alice", key: key)) == .ok)
            #expect(try await store.identities(ofUser: alice).first?.identityData["email_disabled"] == .bool(true))

            let bobID = try #require(try await store.owner(ofIdentity: "apple", subject: "001.apple.bob"))
            #expect(try await post(client, notification("account-delete", subject: "001.apple.bob", key: key)) == .ok)
            #expect(try await proxy(client, bob) == .unauthorized)
            #expect(try await store.owner(ofIdentity: "apple", subject: "001.apple.bob") == nil)
            #expect(try await store.user(id: bobID) == nil, "a user whose only identity is deleted is deleted")
            // The spelling Apple's current page gives takes the same path.
            #expect(try await post(client, notification("account-deleted", subject: "001.apple.alice", key: key)) == .ok)
            #expect(try await store.user(id: alice) == nil, "account-deleted is read as account-delete")
        }
        await connections.shutdown()
        await upstream.stop()
        await apple.stop()
    }
}
