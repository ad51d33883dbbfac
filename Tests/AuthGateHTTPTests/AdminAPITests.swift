import AuthGateCore
import AuthGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AuthGateHTTP

/// GoTrue's admin API plus AuthGate's session endpoints, authorized by service_role tokens.
@Suite("Admin API", .timeLimit(.minutes(3)))
struct AdminAPITests {
    private struct Gateway {
        let app: Application<GatewayRouterResponder<AuthGateRequestContext>>
        let keyRing: SigningKeyRing
        let configuration: AuthGateConfiguration
        let connections: UpstreamConnectionPool

        /// A token with `role`, signed by the gateway's key.
        func token(role: String) throws -> String {
            let now = Int64(Date().timeIntervalSince1970)
            return try AccessTokenIssuer(keyRing: keyRing).mint(
                AccessTokenClaims(
                    iss: configuration.tokens.issuer, sub: "operator", aud: configuration.tokens.audience, exp: now + 600, iat: now, email: "",
                    phone: "",
                    appMetadata: [:], userMetadata: [:], role: role, aal: "aal1", amr: [], sessionID: nil, isAnonymous: false
                )
            )
        }
    }

    private func gateway(upstream: EchoUpstream) throws -> Gateway {
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers: { anonymous: { enabled: true } }
                rate_limits: { token: off, signup: off, nonce: off }
                routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true } ]
                """,
            baseDirectory: "", environment: [:]
        )
        let keyRing = try SigningKeyRing.load(configuration.tokens, allowGenerated: true)
        let connections = UpstreamConnectionPool(maxConnectionsPerUpstream: 8)
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: MemoryAuthStore(), keyRing: keyRing, upstreamConnections: connections)
        return Gateway(
            app: Application(router: GatewayApplication.buildRouter(dependencies), server: GatewayApplication.serverBuilder(dependencies)),
            keyRing: keyRing, configuration: configuration, connections: connections)
    }

    private func signUp(_ client: some TestClientProtocol) async throws -> (access: String, userID: String) {
        try await client.execute(uri: "/auth/v1/signup", method: .post) { (response: TestResponse) throws in
            let body = try JSONValue.parse(Array(response.body.readableBytesView)).objectValue
            return (body?["access_token"]?.stringValue ?? "", body?["user"]?.objectValue?["id"]?.stringValue ?? "")
        }
    }

    private func json(_ response: TestResponse) throws -> [String: JSONValue] {
        try #require(try JSONValue.parse(Array(response.body.readableBytesView)).objectValue)
    }

    @Test("only tokens with an admin role get in: 401 without one, 403 bad_jwt for a bad one (as GoTrue), 403 not_admin for a user's token")
    func authorization() async throws {
        let upstream = try await EchoUpstream.start()
        let gateway = try gateway(upstream: upstream)
        try await gateway.app.test(.router) { client in
            try await client.execute(uri: "/auth/v1/admin/users", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer x.y.z"]) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "bad_jwt")
            }
            let (userToken, _) = try await signUp(client)
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(userToken)"]) {
                (response: TestResponse) throws in
                #expect(response.status == .forbidden)
                #expect(try json(response)["error_code"] == "not_admin")
            }
            try await client.execute(
                uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(try gateway.token(role: "supabase_admin"))"]
            ) {
                #expect($0.status == .ok)
            }
        }
        await gateway.connections.shutdown()
        await upstream.stop()
    }

    @Test("users are paged with X-Total-Count and Link; one user is shown; 404 user_not_found otherwise")
    func listAndShow() async throws {
        let upstream = try await EchoUpstream.start()
        let gateway = try gateway(upstream: upstream)
        let admin: HTTPFields = [.authorization: "Bearer \(try gateway.token(role: "service_role"))"]
        try await gateway.app.test(.router) { client in
            var ids: [String] = []
            for _ in 0..<3 { ids.append(try await signUp(client).userID) }
            try await client.execute(uri: "/auth/v1/admin/users?page=1&per_page=2", method: .get, headers: admin) { (response: TestResponse) throws in
                #expect(response.status == .ok)
                #expect(response.headers[HTTPField.Name("X-Total-Count")!] == "3")
                #expect(response.headers[HTTPField.Name("Link")!]?.contains("rel=\"next\"") == true)
                #expect(try json(response)["users"]?.arrayValue?.count == 2)
            }
            try await client.execute(uri: "/auth/v1/admin/users?page=2&per_page=2", method: .get, headers: admin) { (response: TestResponse) throws in
                #expect(try json(response)["users"]?.arrayValue?.count == 1)
            }
            try await client.execute(uri: "/auth/v1/admin/users/\(ids[1])", method: .get, headers: admin) { (response: TestResponse) throws in
                #expect(try json(response)["id"]?.stringValue == ids[1])
            }
            try await client.execute(uri: "/auth/v1/admin/users/\(UUID().uuidString.lowercased())", method: .get, headers: admin) {
                (response: TestResponse) throws in
                #expect(response.status == .notFound)
                #expect(try json(response)["error_code"] == "user_not_found")
            }
            try await client.execute(uri: "/auth/v1/admin/users?page=0", method: .get, headers: admin) { #expect($0.status == .badRequest) }
            // Found by schemathesis: (page - 1) * per_page overflowed and crashed the process.
            try await client.execute(uri: "/auth/v1/admin/users?page=136325376877762752&per_page=969", method: .get, headers: admin) {
                (response: TestResponse) throws in
                #expect(response.status == .ok)
                #expect(try json(response)["users"]?.arrayValue?.isEmpty == true)
            }
        }
        await gateway.connections.shutdown()
        await upstream.stop()
    }

    @Test("ban_duration takes effect on the proxy at once and none lifts it; sessions are listed and revoked; delete removes the user")
    func banSessionsAndDelete() async throws {
        let upstream = try await EchoUpstream.start()
        let gateway = try gateway(upstream: upstream)
        let admin: HTTPFields = [.authorization: "Bearer \(try gateway.token(role: "service_role"))", .contentType: "application/json"]
        try await gateway.app.test(.live) { client in
            let (token, userID) = try await signUp(client)
            try await client.execute(uri: "/api/x", method: .get, headers: [.authorization: "Bearer \(token)"]) { #expect($0.status == .ok) }
            try await client.execute(
                uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: admin,
                body: ByteBuffer(string: "{\"ban_duration\":\"24h\",\"app_metadata\":{\"plan\":\"pro\"}}")
            ) { (response: TestResponse) throws in
                #expect(response.status == .ok)
                let body = try json(response)
                #expect(body["banned_until"] != nil)
                #expect(body["app_metadata"]?.objectValue?["plan"] == "pro")
            }
            try await client.execute(uri: "/api/x", method: .get, headers: [.authorization: "Bearer \(token)"]) {
                #expect($0.status == .unauthorized, "a ban refuses the user's tokens on the proxy at once")
            }
            try await client.execute(
                uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: admin, body: ByteBuffer(string: "{\"ban_duration\":\"none\"}")
            ) { (response: TestResponse) throws in
                #expect(try json(response)["banned_until"] == nil)
            }
            try await client.execute(
                uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: admin, body: ByteBuffer(string: "{\"ban_duration\":\"soon\"}")
            ) {
                #expect($0.status == .badRequest)
            }

            let (other, otherID) = try await signUp(client)
            let sessionID = try await client.execute(uri: "/auth/v1/admin/users/\(otherID)/sessions", method: .get, headers: admin) {
                (response: TestResponse) throws in
                try #require(try json(response)["sessions"]?.arrayValue?.first?.objectValue?["id"]?.stringValue)
            }
            try await client.execute(uri: "/auth/v1/admin/sessions/\(sessionID)", method: .delete, headers: admin) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/x", method: .get, headers: [.authorization: "Bearer \(other)"]) {
                #expect($0.status == .unauthorized)
            }
            try await client.execute(uri: "/auth/v1/admin/sessions/\(sessionID)", method: .delete, headers: admin) { #expect($0.status == .notFound) }

            try await client.execute(
                uri: "/auth/v1/admin/users/\(otherID)", method: .delete, headers: admin, body: ByteBuffer(string: "{\"should_soft_delete\":true}")
            ) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/auth/v1/admin/users/\(otherID)", method: .get, headers: admin) { (response: TestResponse) throws in
                #expect(try json(response)["deleted_at"] != nil)
            }
            try await client.execute(uri: "/auth/v1/admin/users/\(userID)", method: .delete, headers: admin) { #expect($0.status == .ok) }
            try await client.execute(uri: "/auth/v1/admin/users/\(userID)", method: .get, headers: admin) { #expect($0.status == .notFound) }
        }
        await gateway.connections.shutdown()
        await upstream.stop()
    }
}
