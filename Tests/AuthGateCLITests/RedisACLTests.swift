import AuthGateCore
import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The least-privilege Redis users that docs/operations.md gives operators, one for the Redis
/// nodes and one for the Sentinels: a gateway and the operator commands do all their work as
/// those users, and Redis refuses nothing (every node's and Sentinel's ACL log stays empty). The
/// ACL lines are read from the guide itself, so the guide cannot drift.
@Suite("Redis ACL users from the operations guide", .serialized, .timeLimit(.minutes(4)))
struct RedisACLTests {
    /// An `ACL SETUSER authgate …` line of docs/operations.md, split into arguments: the Sentinels'
    /// (the one that grants a `SENTINEL` subcommand) or the Redis nodes'.
    static func guideACL(sentinel: Bool) throws -> [String] {
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/operations.md")
        let text = try String(contentsOf: guide, encoding: .utf8)
        let line = try #require(
            text.split(separator: "\n").first { $0.hasPrefix("ACL SETUSER authgate ") && $0.contains("+sentinel|") == sentinel },
            "no `ACL SETUSER authgate` line for the \(sentinel ? "Sentinels" : "Redis nodes") in docs/operations.md")
        return line.split(separator: " ").map(String.init)
    }

    /// Creates the guide's user on the server or Sentinel at `port` (as its default user), with
    /// `password` in place of the guide's placeholder.
    static func create(_ acl: [String], password: String, on port: Int) async throws {
        let arguments = acl.dropFirst().map { $0 == ">CHANGE-ME" ? ">\(password)" : $0 }
        #expect(arguments.contains(">\(password)"), "the guide's line holds the >CHANGE-ME placeholder")
        _ = try await SentinelCluster.command(port, RedisCommand("ACL", arguments: arguments.map { .string($0) }))
    }

    /// What the ACL log of the server or Sentinel at `port` holds (empty: nothing refused).
    static func aclLog(_ port: Int) async throws -> [RESPValue] {
        try await SentinelCluster.command(port, RedisCommand("ACL", "LOG")).array ?? [.error("ACL LOG gave no array")]
    }

    /// Checks that the server or Sentinel at `port` has connections that `match`, each signed in
    /// as the guide's user (with the default user unrestricted, a connection that ignored the
    /// user name would pass everything else).
    static func expectSignedIn(on port: Int, _ what: String, _ match: (Substring) -> Bool) async throws {
        try await waitUntil("the gateway's \(what) connections on port \(port)") {
            let clients = try await SentinelCluster.command(port, RedisCommand("CLIENT", "LIST")).string ?? ""
            let ours = clients.split(separator: "\n").filter(match)
            #expect(ours.allSatisfy { $0.contains(" user=authgate ") }, "\(what) connections as another user: \(ours)")
            return !ours.isEmpty
        }
    }

    static func password() -> String { "pw-\(UInt32.random(in: 0...UInt32.max))" }

    @Test("sign-ins, refreshes, the proxy, sign-outs, bans, deletion, the audit trail and doctor as the guide's ACL user: nothing refused")
    func guideUserSuffices() async throws {
        let acl = try Self.guideACL(sentinel: false)
        #expect(acl.contains("~ag:*") && acl.contains("-@all") && acl.contains("resetchannels"), "the guide's user is confined: \(acl)")
        #expect(!acl.contains { $0.hasPrefix("+@") }, "commands are granted one by one, not by category: \(acl)")
        try await withRedisServer { redis in
            let password = Self.password()
            try await Self.create(acl, password: password, on: redis.port)
            // The default user must not be what the gateway uses.
            var url = redis.url
            url.username = "authgate"
            try await run(
                store: "store: { kind: redis, redis: { url: \"\(url)\" } }", environment: ["AUTHGATE_STORE_REDIS_PASSWORD": password]
            ) { _ in
                try await Self.expectSignedIn(on: redis.port, "Redis") { $0.contains(" name=authgate ") }
            }
            let log = try await Self.aclLog(redis.port)
            #expect(log.isEmpty, "Redis refused the guide's user: \(log)")
        }
    }

    @Test(
        "behind three Sentinels with replica acknowledgement, as the guide's users on every node and Sentinel: nothing refused, a failover followed; a Sentinel that refuses a channel is a warning"
    )
    func guideUsersBehindSentinel() async throws {
        let dataACL = try Self.guideACL(sentinel: false)
        let sentinelACL = try Self.guideACL(sentinel: true)
        #expect(sentinelACL.contains("-@all") && sentinelACL.contains("resetchannels"), "the Sentinels' user is confined: \(sentinelACL)")
        #expect(
            !sentinelACL.contains { $0.hasPrefix("+@") || $0 == "+sentinel" || $0.hasPrefix("~") || $0 == "&*" || $0 == "allchannels" },
            "the Sentinels' user gets one SENTINEL subcommand and named channels, no keys: \(sentinelACL)")
        let cluster = try await SentinelCluster.start(replicaCount: 1)
        do {
            let (password, sentinelPassword) = (Self.password(), Self.password())
            for node in [cluster.master] + cluster.replicas { try await Self.create(dataACL, password: password, on: node.port) }
            for sentinel in cluster.sentinels { try await Self.create(sentinelACL, password: sentinelPassword, on: sentinel.port) }
            let nodes = cluster.sentinels.map { "\"127.0.0.1:\($0.port)\"" }.joined(separator: ", ")
            // The URL's host and port are not used behind Sentinel (port 1 would refuse).
            let store = """
                store:
                  kind: redis
                  redis:
                    url: "redis://authgate:@127.0.0.1:1/0"
                    min_replicas_acked: 1
                    sentinel: { master_name: \(SentinelCluster.masterName), nodes: [\(nodes)], username: authgate }
                """
            let environment = ["AUTHGATE_STORE_REDIS_PASSWORD": password, "AUTHGATE_STORE_REDIS_SENTINEL_PASSWORD": sentinelPassword]
            let log = try await run(store: store, environment: environment) { signIn in
                try await Self.expectSignedIn(on: cluster.master.port, "Redis") { $0.contains(" name=authgate ") }
                for sentinel in cluster.sentinels {
                    try await Self.expectSignedIn(on: sentinel.port, "Sentinel watch") { $0.contains(" cmd=subscribe ") }
                }
                // A failover: the replica becomes master, the master its replica (which the
                // acknowledged writes need), and the gateway signs users in on the new master.
                try await cluster.failOver()
                try await cluster.waitUntil("the replica is master and the old master its replica, in sync") {
                    let promoted = try await SentinelCluster.info(cluster.replica.port, "replication").contains("role:master")
                    let demoted = try await SentinelCluster.info(cluster.master.port, "replication").contains("master_link_status:up")
                    return promoted && demoted
                }
                var attempt = 0
                try await cluster.waitUntil("a sign-in on the new master") {
                    attempt += 1
                    return try await signIn("after-failover-\(attempt)") == 200
                }
            }
            #expect(!log.contains("cannot watch a Redis Sentinel"), "a Sentinel refused the guide's user: \(log)")
            for process in [cluster.master] + cluster.replicas + cluster.sentinels {
                let refused = try await Self.aclLog(process.port)
                #expect(refused.isEmpty, "port \(process.port) refused the guide's user: \(refused)")
            }
            // The same Sentinel user without one of its channels: the gateway still finds the
            // master, and says that it cannot watch that Sentinel.
            _ = try await SentinelCluster.command(
                cluster.sentinels[0].port,
                RedisCommand("ACL", "SETUSER", "authgate", "resetchannels", "&+switch-master", "&+failover-state-wait-promotion"))
            try await refusedWatchIsWarned(store: store, environment: environment, sentinelPort: cluster.sentinels[0].port)
        } catch {
            print(cluster.logs())
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    /// Starts a gateway and waits for its warning that the Sentinel at `sentinelPort` refused
    /// the watch (Redis's `NOPERM` in it).
    private func refusedWatchIsWarned(store: String, environment: [String: String], sentinelPort: Int) async throws {
        let files = try GatewayFiles("redis-acl-refused")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            \(store)
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], environment: environment)
        do {
            try await waitUntil("the refused watch is logged") {
                server.log.split(separator: "\n").contains {
                    $0.contains("cannot watch a Redis Sentinel for failovers") && $0.contains("\"warning\"") && $0.contains("NOPERM")
                        && $0.contains("127.0.0.1:\(sentinelPort)")
                }
            }
            #expect(try await HTTP.get(server.baseURL.appendingPathComponent("readyz")).1.statusCode == 200, "the master is still found")
        } catch {
            print(server.log)
            _ = await server.stop()
            throw error
        }
        #expect(await server.stop() == 0)
    }

    /// Runs every flow against a gateway with `store` (its YAML) and `environment` (its secrets),
    /// then `afterwards` with a way to sign a new user in (the status it got); returns the
    /// gateway's log.
    @discardableResult
    private func run(
        store: String, environment: [String: String], afterwards: (_ signIn: (String) async throws -> Int) async throws -> Void = { _ in }
    ) async throws -> String {
        let files = try GatewayFiles("redis-acl")
        defer { files.remove() }
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let upstream = try await EchoUpstream.start()
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            \(store)
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers:
              anonymous: { enabled: true }
              oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
            routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true } ]
            security: { manual_linking_enabled: true }
            """)
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
            try await afterwards { subject in
                try await call(
                    "POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"fake\",\"id_token\":\"\(idToken(subject))\"}"
                ).0
            }
        } catch {
            _ = await server.stop()
            await upstream.stop()
            await provider.stop()
            throw error
        }
        #expect(await server.stop() == 0)
        await upstream.stop()
        await provider.stop()
        return server.log
    }
}
