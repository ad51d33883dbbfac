import AuthGateCore
import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The least-privilege Redis user that docs/operations.md gives operators: a gateway and the
/// operator commands do all their work as that user, and Redis refuses nothing (its ACL log
/// stays empty). The ACL line is read from the guide itself, so the guide cannot drift.
@Suite("Redis ACL user from the operations guide", .serialized, .timeLimit(.minutes(3)))
struct RedisACLTests {
    /// The `ACL SETUSER authgate …` line of docs/operations.md, split into arguments.
    static func guideACL() throws -> [String] {
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/operations.md")
        let text = try String(contentsOf: guide, encoding: .utf8)
        let line = try #require(
            text.split(separator: "\n").first { $0.hasPrefix("ACL SETUSER authgate ") }, "no `ACL SETUSER authgate` line in docs/operations.md")
        return line.split(separator: " ").map(String.init)
    }

    @Test("sign-ins, refreshes, the proxy, sign-outs, bans, deletion, the audit trail and doctor as the guide's ACL user: nothing refused")
    func guideUserSuffices() async throws {
        let acl = try Self.guideACL()
        #expect(acl.contains("~ag:*") && acl.contains("-@all") && acl.contains("resetchannels"), "the guide's user is confined: \(acl)")
        #expect(!acl.contains { $0.hasPrefix("+@") }, "commands are granted one by one, not by category: \(acl)")
        try await withRedisServer { redis in
            let logger = Logger(label: "acl-test")
            let admin = RedisClient(configuration: .init(url: redis.url, poolSize: 1), logger: logger)
            defer { Task { await admin.shutdown() } }
            let password = "pw-\(UInt32.random(in: 0...UInt32.max))"
            let arguments = acl.dropFirst().map { $0 == ">CHANGE-ME" ? ">\(password)" : $0 }
            #expect(arguments.contains(">\(password)"), "the guide's line holds the >CHANGE-ME placeholder")
            _ = try await admin.send(RedisCommand("ACL", arguments: arguments.map { .string($0) }))
            // The default user must not be what the gateway uses.
            var url = redis.url
            url.username = "authgate"
            try await run(redisURL: url, password: password)
            let log = try await admin.send(RedisCommand("ACL", "LOG"))
            #expect(log.array?.isEmpty == true, "Redis refused the guide's user: \(log)")
        }
    }

    private func run(redisURL: RedisURL, password: String) async throws {
        let files = try GatewayFiles("redis-acl")
        defer { files.remove() }
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let upstream = try await EchoUpstream.start()
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            store: { kind: redis, redis: { url: "\(redisURL)" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers:
              anonymous: { enabled: true }
              oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
            routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true } ]
            security: { manual_linking_enabled: true }
            """)
        let environment = ["AUTHGATE_STORE_REDIS_PASSWORD": password]
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], environment: environment)
        func call(_ method: String, _ path: String, token: String? = nil, json: String? = nil) async throws -> (Int, [String: JSONValue]) {
            let url = try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
            let (data, response) = try await HTTP.send(
                url, method: method,
                headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], json: json)
            return (response.statusCode, (try? JSONValue.parse(Array(data)).objectValue) ?? [:])
        }
        func cli(_ arguments: [String]) async throws -> String {
            let result = try await AuthGateBinary.run(arguments + ["--config", files.config.path], environment: environment)
            #expect(result.status == 0, "authgate \(arguments.joined(separator: " ")): \(result.standardError)")
            return result.standardOutput
        }
        do {
            #expect(try await call("GET", "/readyz").0 == 200)
            let (nonceStatus, _) = try await call("POST", "/auth/v1/nonce")
            #expect(nonceStatus == 200)
            // An anonymous user, then upgraded to the provider's identity (linking keeps the id).
            let (signupStatus, anonymous) = try await call("POST", "/auth/v1/signup", json: "{}")
            #expect(signupStatus == 200)
            let anonymousToken = try #require(anonymous["access_token"]?.stringValue)
            let now = Int64(Date().timeIntervalSince1970)
            // Each ID token is used once (a replayed one is refused): `issuedAgo` tells two apart.
            func idToken(_ subject: String, issuedAgo: Int64 = 0) -> String {
                FakeProvider.token(
                    claims: [
                        "iss": .string(provider.issuer), "aud": "app", "sub": .string(subject), "iat": .integer(now - issuedAgo),
                        "exp": .integer(now + 600),
                        "email": .string("\(subject)@example.com"), "email_verified": true
                    ],
                    key: FakeProvider.sharedKeys[0])
            }
            let (linkStatus, linked) = try await call(
                "POST", "/auth/v1/token?grant_type=id_token", token: anonymousToken,
                json: "{\"provider\":\"fake\",\"id_token\":\"\(idToken("linked"))\",\"link_identity\":true}")
            #expect(linkStatus == 200, "\(linked)")
            #expect(linked["user"]?.objectValue?["id"] == anonymous["user"]?.objectValue?["id"], "linking keeps the user id")
            // A new user, signed in twice (the second is a returning sign-in).
            let (signInStatus, session) = try await call(
                "POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"fake\",\"id_token\":\"\(idToken("acl-user"))\"}")
            #expect(signInStatus == 200)
            let (againStatus, _) = try await call(
                "POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"fake\",\"id_token\":\"\(idToken("acl-user", issuedAgo: 1))\"}")
            #expect(againStatus == 200)
            let access = try #require(session["access_token"]?.stringValue)
            let refresh = try #require(session["refresh_token"]?.stringValue)
            let userID = try #require(session["user"]?.objectValue?["id"]?.stringValue)
            #expect(try await call("GET", "/auth/v1/user", token: access).0 == 200)
            #expect(try await call("PUT", "/auth/v1/user", token: access, json: "{\"data\":{\"theme\":\"dark\"}}").0 == 200)
            #expect(try await call("GET", "/api/x", token: access).0 == 200)
            // Rotation, then reuse of the parent outside the window: the session is revoked.
            let (rotatedStatus, rotated) = try await call(
                "POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}")
            #expect(rotatedStatus == 200)
            let next = try #require(rotated["refresh_token"]?.stringValue)
            #expect(try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(next)\"}").0 == 200)
            #expect(try await call("POST", "/auth/v1/logout", token: anonymousToken).0 == 204)
            #expect(try await call("GET", "/api/x", token: anonymousToken).0 == 401, "the revoked session is refused")
            // The operator's side, through the same user.
            #expect(try await cli(["users", "list"]).contains(userID))
            #expect(try await cli(["users", "show", userID]).contains(userID))
            let sessions = try JSONValue.parse(Array(try await cli(["sessions", "list", "--user", userID, "--json"]).utf8))
            #expect(sessions.objectValue?["sessions"]?.arrayValue?.count == 2, "a session per sign-in: \(sessions)")
            #expect(try await cli(["users", "ban", userID, "--for", "1h"]).contains("banned \(userID)"))
            #expect(try await call("GET", "/auth/v1/user", token: access).0 == 403, "the banned user's token is refused")
            _ = try await cli(["audit"])
            _ = try await cli(["doctor"])
            _ = try await cli(["users", "delete", userID])
            let (metrics, _) = try await HTTP.get(server.baseURL.appendingPathComponent("metrics"))
            let errors = String(decoding: metrics, as: UTF8.self).split(separator: "\n").filter {
                $0.hasPrefix("authgate_redis_errors_total") && !$0.hasSuffix(" 0")
            }
            #expect(errors.isEmpty, "failed Redis calls: \(errors)")
        } catch {
            _ = await server.stop()
            await upstream.stop()
            await provider.stop()
            throw error
        }
        #expect(await server.stop() == 0)
        await upstream.stop()
        await provider.stop()
    }
}
