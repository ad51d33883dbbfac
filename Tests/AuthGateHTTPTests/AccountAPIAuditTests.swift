import AuthGateCore
import AuthGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AuthGateHTTP

/// The outside audit's findings against the user endpoints and the admin API, through the
/// production server set-up (``GatewayApplication/serverBuilder(_:logger:)``).
@Suite("Account API audit findings", .serialized, .timeLimit(.minutes(3)))
struct AccountAPIAuditTests {
    private struct Gateway {
        let app: Application<GatewayRouterResponder<AuthGateRequestContext>>
        let dependencies: GatewayApplication.Dependencies
        let keyRing: SigningKeyRing

        /// A token with `role` for `subject` (and `sessionID`), signed by the gateway's key.
        func token(role: String, subject: String = "operator", sessionID: String? = nil) throws -> String {
            let configuration = dependencies.configuration
            let now = Int64(Date().timeIntervalSince1970)
            return try AccessTokenIssuer(keyRing: keyRing).mint(
                AccessTokenClaims(
                    iss: configuration.tokens.issuer, sub: subject, aud: configuration.tokens.audience, exp: now + 600, iat: now, email: "",
                    phone: "",
                    appMetadata: [:], userMetadata: [:], role: role, aal: "aal1", amr: [], sessionID: sessionID, isAnonymous: false
                )
            )
        }
    }

    private func gateway(_ extra: String = "") throws -> Gateway {
        let configuration = try AuthGateConfiguration.parse(
            yaml: "providers: { anonymous: { enabled: true } }\n" + extra, baseDirectory: "", environment: [:]
        )
        let keyRing = try SigningKeyRing.load(configuration.tokens, allowGenerated: true)
        let dependencies = GatewayApplication.Dependencies(configuration: configuration, store: MemoryAuthStore(), keyRing: keyRing)
        return Gateway(
            app: Application(router: GatewayApplication.buildRouter(dependencies), server: GatewayApplication.serverBuilder(dependencies)),
            dependencies: dependencies, keyRing: keyRing
        )
    }

    /// A token's claims, unverified (reading the session id the gateway put in it).
    private static func claims(of token: String) throws -> AccessTokenClaims {
        let payload = try #require(token.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode($0) })
        return try JSONDecoder().decode(AccessTokenClaims.self, from: Data(payload))
    }

    private func json(_ response: TestResponse) throws -> [String: JSONValue] {
        try #require(try JSONValue.parse(Array(response.body.readableBytesView)).objectValue)
    }

    private func signUp(_ client: some TestClientProtocol) async throws -> (access: String, userID: String, sessionID: String) {
        try await client.execute(uri: "/auth/v1/signup", method: .post) { (response: TestResponse) throws in
            let body = try JSONValue.parse(Array(response.body.readableBytesView)).objectValue
            let access = body?["access_token"]?.stringValue ?? ""
            return (access, body?["user"]?.objectValue?["id"]?.stringValue ?? "", try Self.claims(of: access).sessionID ?? "")
        }
    }

    // MARK: Finding 3: rate limits, however the path is spelled

    @Test("every spelling of a limited endpoint counts against its one budget", arguments: ["live", "router"])
    func rateLimitSpellings(driver: String) async throws {
        let gateway = try gateway("rate_limits: { signup: 2/1h, nonce: 2/1h }")
        try await gateway.app.test(driver == "live" ? .live : .router) { client in
            for (endpoint, spellings) in [
                ("signup", ["/auth/v1/signup", "//auth/v1/signup", "/auth/v1/signup/", "/auth/v1//signup", "/auth//v1/signup"]),
                ("nonce", ["/auth/v1/nonce/", "/auth/v1/nonce", "//auth/v1/nonce", "/auth/v1/./nonce"])
            ] {
                var statuses: [HTTPResponse.Status] = []
                for path in spellings {
                    statuses.append(try await client.execute(uri: path, method: .post) { $0.status })
                }
                #expect(statuses.prefix(2).allSatisfy { $0 == .ok }, "\(endpoint): \(statuses)")
                // Served means counted. Without the connection pipeline (router only) a dot
                // segment is not resolved at all: 404, which is not a way around the limit either.
                let allowed: Set<HTTPResponse.Status> = driver == "live" ? [.tooManyRequests] : [.tooManyRequests, .notFound]
                #expect(statuses.dropFirst(2).allSatisfy { allowed.contains($0) }, "\(endpoint) spelled differently was not counted: \(statuses)")
            }
        }
    }

    // MARK: Finding 4: what a user may write

    @Test("user_metadata is capped (400), request bodies are capped per endpoint (413), PUT /user is rate-limited per user (429)")
    func userWrites() async throws {
        let gateway = try gateway("users: { max_user_metadata: 1KiB }\nrate_limits: { signup: off, user_update: 5/1m }")
        try await gateway.app.test(.live) { client in
            let (access, _, _) = try await signUp(client)
            let bearer: HTTPFields = [.authorization: "Bearer \(access)", .contentType: "application/json"]
            // The limit counts in fixed windows aligned to the clock's minutes (RateLimiter): the
            // six counted PUTs below must fall in one window, so they start with 20 s or more of
            // it left (a run that straddled a minute saw its sixth PUT allowed).
            let intoWindow = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 60)
            if intoWindow > 40 { try await Task.sleep(for: .seconds(60.1 - intoWindow)) }
            let big = "{\"data\":{\"blob\":\"" + String(repeating: "x", count: 1500) + "\"}}"
            try await client.execute(uri: "/auth/v1/user", method: .put, headers: bearer, body: ByteBuffer(string: big)) { response in
                #expect(response.status == .badRequest)
                let body = try json(response)
                #expect(body == ["code": 400, "error_code": "validation_failed", "msg": "user_metadata is too large"])
            }
            // A body over the cap is answered before it has all been read, so the answer closes
            // its connection: each goes on a connection of its own.
            let huge = "{\"data\":{\"blob\":\"" + String(repeating: "x", count: 64 << 10) + "\"}}"
            let port = try #require(client.port)
            for (path, method, headers) in [
                ("/auth/v1/user", HTTPRequest.Method.put, bearer), ("/auth/v1/signup", .post, [.contentType: "application/json"])
            ] {
                let response = try await TestClient.withClient(host: "127.0.0.1", port: port) { oneShot in
                    try await oneShot.execute(
                        TestClient.Request(path, method: method, authority: "localhost", headers: headers, body: ByteBuffer(string: huge)))
                }
                #expect(response.status == .contentTooLarge, "\(path)")
            }
            // Two puts above counted; three more fit in 5/1m, the sixth is refused.
            for index in 0..<3 {
                try await client.execute(uri: "/auth/v1/user", method: .put, headers: bearer, body: ByteBuffer(string: "{\"data\":{\"n\":\(index)}}"))
                {
                    #expect($0.status == .ok)
                }
            }
            try await client.execute(uri: "/auth/v1/user", method: .put, headers: bearer, body: ByteBuffer(string: "{\"data\":{\"n\":9}}")) {
                response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "over_request_rate_limit")
            }
            // The user's record stayed small: the refused writes changed nothing.
            try await client.execute(uri: "/auth/v1/user", method: .get, headers: bearer) { response in
                #expect(response.body.readableBytes < 2048)
            }
        }
    }

    // MARK: A cached token's look-alike

    @Test("a bearer token spelled with a Unicode equivalent of its ASCII is refused, before and after the real one is cached")
    func cachedTokenLookAlike() async throws {
        let gateway = try gateway("rate_limits: { signup: off }")
        try await gateway.app.test(.live) { client in
            // A token with a K in it (nearly every token has one), that K as U+212A KELVIN SIGN,
            // which Swift's string equality and hashing treat as the same character.
            var access = ""
            for _ in 0..<20 where !access.contains("K") { access = try await signUp(client).access }
            let lookAlike = try #require(TamperedToken.unicodeLookAlike(access))
            func status(_ token: String) async throws -> HTTPResponse.Status {
                try await client.execute(uri: "/auth/v1/user", method: .get, headers: [.authorization: "Bearer \(token)"]) { $0.status }
            }
            let refused = try await status(lookAlike)
            #expect(refused == .unauthorized || refused == .forbidden)
            #expect(try await status(access) == .ok)
            #expect(try await status(lookAlike) == refused, "the look-alike passed once the real token was cached")
        }
    }

    // MARK: Findings 5 and 10: the admin API

    @Test("ban_duration past a century, or not a duration, is a 400 that changes nothing; a sane one bans")
    func banDurations() async throws {
        let gateway = try gateway("rate_limits: { signup: off }")
        try await gateway.app.test(.router) { client in
            let (_, userID, _) = try await signUp(client)
            let admin: HTTPFields = [.authorization: "Bearer \(try gateway.token(role: "service_role"))", .contentType: "application/json"]
            for duration in ["9999999999999999h", "106751991167301d", "-1h", "1.5h", "forever", String(repeating: "9", count: 400) + "s"] {
                try await client.execute(
                    uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: admin,
                    body: ByteBuffer(string: "{\"ban_duration\":\"\(duration)\",\"app_metadata\":{\"x\":1}}")
                ) { response in
                    #expect(response.status == .badRequest, "\(duration.prefix(20))")
                    let message = try json(response)["msg"]?.stringValue ?? ""
                    #expect(message.utf8.count < 150, "the refused value is echoed bounded")
                }
            }
            try await client.execute(uri: "/auth/v1/admin/users/\(userID)", method: .get, headers: admin) { response in
                let body = try json(response)
                #expect(body["banned_until"] == nil || body["banned_until"] == .null)
                #expect(body["app_metadata"]?.objectValue?["x"] == nil, "a refused request wrote its metadata")
            }
            try await client.execute(
                uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: admin, body: ByteBuffer(string: "{\"ban_duration\":\"876000h\"}")
            ) {
                #expect($0.status == .ok)
            }
        }
    }

    @Test("an admin role in a token whose session was revoked, or whose user is banned, no longer administers")
    func adminTokensFollowTheirSession() async throws {
        let gateway = try gateway("rate_limits: { signup: off }\ntokens: { admin_roles: [service_role, staff] }")
        try await gateway.app.test(.router) { client in
            let (_, userID, sessionID) = try await signUp(client)
            let staff = try gateway.token(role: "staff", subject: userID, sessionID: sessionID)
            let service: HTTPFields = [.authorization: "Bearer \(try gateway.token(role: "service_role"))"]
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(staff)"]) {
                #expect($0.status == .ok)
            }
            // Revoke the staff member's session: the token's role no longer counts.
            try await client.execute(uri: "/auth/v1/admin/sessions/\(sessionID)", method: .delete, headers: service) { #expect($0.status == .ok) }
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(staff)"]) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "session_not_found")
            }
            // A session-less staff token for a banned user is refused too.
            let banned = try gateway.token(role: "staff", subject: userID)
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(banned)"]) {
                #expect($0.status == .ok)
            }
            try await client.execute(
                uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: service + [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"ban_duration\":\"1h\"}")
            ) { #expect($0.status == .ok) }
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(banned)"]) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "user_banned")
            }
            // A user's own token is not an admin's.
            try await client.execute(uri: "/auth/v1/admin/users", method: .get, headers: [.authorization: "Bearer \(try signUp(client).access)"]) {
                #expect($0.status == .forbidden)
            }
        }
    }

    @Test("app_metadata set by an admin is capped too")
    func appMetadataCap() async throws {
        let gateway = try gateway("rate_limits: { signup: off }\nusers: { max_app_metadata: 1KiB }")
        try await gateway.app.test(.router) { client in
            let (_, userID, _) = try await signUp(client)
            let admin: HTTPFields = [.authorization: "Bearer \(try gateway.token(role: "service_role"))", .contentType: "application/json"]
            let body = "{\"app_metadata\":{\"blob\":\"" + String(repeating: "y", count: 2000) + "\"}}"
            try await client.execute(uri: "/auth/v1/admin/users/\(userID)", method: .put, headers: admin, body: ByteBuffer(string: body)) {
                response in
                #expect(response.status == .badRequest)
                let body = try json(response)
                #expect(body["msg"] == "app_metadata is too large")
            }
        }
    }

    /// Found by fuzzing (FuzzJWKSet): two JSON readers with different rules. Every body is now
    /// read by the one strict reader first, so Codable only maps documents with one reading.
    @Test(
        "a request body with duplicate names, a raw control character or an out-of-range number is 400 bad_json, never a guess",
        arguments: [
            "{\"provider\":\"apple\",\"provider\":\"google\",\"id_token\":\"a.b.c\"}",
            "{\"provider\":\"apple\u{0}\",\"id_token\":\"a.b.c\"}",
            "{\"provider\":\"apple\",\"id_token\":\"a.b.c\",\"n\":1e999}",
            "{\"provider\":\"apple\",\"id_token\":\"a.b.c\",\"n\":\"\\ud800\"}",
            // A member of the wrong type, or a body that is not an object.
            "{\"provider\":5,\"id_token\":\"a.b.c\"}",
            "{\"provider\":\"apple\",\"id_token\":\"a.b.c\",\"link_identity\":\"yes\"}",
            "[\"apple\"]",
            "\"apple\""
        ])
    func strictBodies(body: String) async throws {
        let gateway = try gateway("rate_limits: { token: off }")
        try await gateway.app.test(.router) { client in
            try await client.execute(
                uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body)
            ) { response throws in
                #expect(response.status == .badRequest)
                let answer = try json(response)
                #expect(answer["error_code"] == "bad_json")
            }
        }
    }

    // MARK: Findings 8 and 11: what clients read

    @Test("clients get GoTrue's texts, never internal detail; an unknown refresh token is refresh_token_not_found")
    func clientTexts() async throws {
        let gateway = try gateway("rate_limits: { token: off, signup: off }")
        try await gateway.app.test(.router) { client in
            let provider = String(repeating: "p", count: 300)
            try await client.execute(
                uri: "/auth/v1/token?grant_type=id_token", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"provider\":\"\(provider)\",\"id_token\":\"a.b.c\"}")
            ) { response in
                let body = try json(response)
                // GoTrue's text names the client's own value: quoted, and cut at 64 characters.
                #expect(body["msg"] == .string("Custom OIDC provider \"\(String(repeating: "p", count: 64))\" not allowed"))
            }
            // GoTrue quotes the scope it does not know as Go's %q does; a control byte is never sent back raw.
            let (access, _, _) = try await signUp(client)
            try await client.execute(
                uri: "/auth/v1/logout?scope=every%22one%0A%01", method: .post, headers: [.authorization: "Bearer \(access)"]
            ) { response in
                let body = try json(response)
                #expect(response.status == .badRequest)
                #expect(body["msg"] == #"Unsupported logout scope "every\"one\n\x01""#)
            }
            try await client.execute(uri: "/auth/v1/user", method: .get, headers: [.authorization: "Bearer a.b.c"]) { response in
                #expect(response.status == .forbidden)
                let body = try json(response)
                #expect(body["msg"] == "invalid JWT: unable to parse or verify signature")
            }
            try await client.execute(
                uri: "/auth/v1/token?grant_type=refresh_token", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"refresh_token\":\"abcdefghijkl\"}")
            ) { response in
                #expect(response.status == .badRequest)
                let body = try json(response)
                #expect(body == ["code": 400, "error_code": "refresh_token_not_found", "msg": "Invalid Refresh Token: Refresh Token Not Found"])
            }
        }
    }
}
