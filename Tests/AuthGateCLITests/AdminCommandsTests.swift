import AuthGateCore
import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The admin commands as operators run them: the real binary against a real Redis, beside a
/// running gateway whose proxy must refuse revoked tokens within a second.
@Suite("Admin commands", .serialized, .timeLimit(.minutes(3)))
struct AdminCommandsTests {
    /// A gateway on Redis with a fake OIDC provider (so one user can hold several sessions) and an
    /// authenticated proxy route; the admin commands read the same configuration file.
    final class Setup: Sendable {
        let files: GatewayFiles
        var config: URL { files.config }
        let provider: FakeProvider
        let upstream: EchoUpstream
        let server: AuthGateServer
        /// The store's key prefix (tests that put records straight into Redis use it).
        let prefix = "admin-\(UInt32.random(in: 0...UInt32.max)):"

        /// - Parameter redis: the Redis the gateway and the commands use (the shared one by default).
        init(redis: RedisURL? = nil) async throws {
            let redisURL: RedisURL
            if let redis { redisURL = redis } else { redisURL = try await SharedRedis.url() }
            files = try GatewayFiles("admin")
            provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
            upstream = try await EchoUpstream.start()
            try files.writeConfig(
                """
                server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
                store: { kind: redis, redis: { url: "\(redisURL)", key_prefix: "\(prefix)" } }
                tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
                providers:
                  anonymous: { enabled: true }
                  oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
                rate_limits: { token: off, signup: off, nonce: off }
                routes:
                  - { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true }
                logging: { level: warning }
                """)
            server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        }

        func tearDown() async {
            _ = await server.stop()
            await upstream.stop()
            await provider.stop()
            files.remove()
        }

        /// Runs `authgate <arguments> --config <file>`.
        func admin(_ arguments: [String]) async throws -> AuthGateBinary.Result {
            try await AuthGateBinary.run(arguments + ["--config", config.path])
        }

        /// Signs `subject` in with a fresh ID token (with `email`, verified, when given): a new session each time.
        func signIn(_ subject: String, email: String? = nil) async throws -> (access: String, userID: String, sessionID: String) {
            let (data, response) = try await postIDToken(subject, email: email)
            try #require(response.statusCode == 200, "sign-in answered \(response.statusCode): \(String(decoding: data, as: UTF8.self))")
            let body = try #require(try JSONValue.parse(Array(data)).objectValue)
            let access = try #require(body["access_token"]?.stringValue)
            let claims = try #require(Base64URL.decode(access.split(separator: ".")[1]).flatMap { try? JSONValue.parse($0) }?.objectValue)
            return (access, try #require(claims["sub"]?.stringValue), try #require(claims["session_id"]?.stringValue))
        }

        /// The status of a sign-in attempt.
        func signInStatus(_ subject: String) async throws -> Int {
            try await postIDToken(subject).1.statusCode
        }

        private func postIDToken(_ subject: String, email: String? = nil) async throws -> (Data, HTTPURLResponse) {
            let now = Int64(Date().timeIntervalSince1970)
            var claims: [String: JSONValue] = [
                "iss": .string(provider.issuer), "aud": "app", "sub": .string(subject), "iat": .integer(now), "exp": .integer(now + 600),
                "jti": .string(UUID().uuidString)
            ]
            if let email { claims.merge(["email": .string(email), "email_verified": true]) { _, new in new } }
            let idToken = FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
            return try await HTTP.send(
                server.baseURL.appendingPathComponent("auth/v1/token").appending(queryItems: [URLQueryItem(name: "grant_type", value: "id_token")]),
                method: "POST", json: "{\"provider\":\"fake\",\"id_token\":\"\(idToken)\"}"
            )
        }

        /// The proxy's answer to `token` on the authenticated route.
        func proxyStatus(_ token: String) async throws -> Int {
            try await HTTP.get(server.baseURL.appendingPathComponent("api/x"), headers: ["Authorization": "Bearer \(token)"]).1.statusCode
        }

        /// Waits up to 3 s for the proxy to refuse `token`; how long it took.
        func refusedAfter(_ token: String) async throws -> Duration? {
            let clock = ContinuousClock()
            let start = clock.now
            // Polls for up to 10 s; the callers bound the delay generously (3 s; it is milliseconds
            // on an idle machine) so a loaded CI machine does not fail them.
            while clock.now - start < .seconds(10) {
                if try await proxyStatus(token) == 401 { return clock.now - start }
                try await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
    }

    private func withSetup(redis: RedisURL? = nil, _ body: (Setup) async throws -> Void) async throws {
        let setup = try await Setup(redis: redis)
        do {
            try await body(setup)
        } catch {
            await setup.tearDown()
            throw error
        }
        await setup.tearDown()
    }

    @Test("sessions revoke: the gateway refuses the token within 3 s and sessions list no longer shows it")
    func revokeSession() async throws {
        try await withSetup { setup in
            let first = try await setup.signIn("alice")
            let second = try await setup.signIn("alice")
            #expect(first.userID == second.userID)
            #expect(try await setup.proxyStatus(first.access) == 200)
            let listed = try await setup.admin(["sessions", "list", "--user", first.userID])
            #expect(listed.status == 0)
            #expect(listed.standardOutput.contains(first.sessionID) && listed.standardOutput.contains(second.sessionID))
            // Ids copied in capitals name the same user and session (the listing was empty, and
            // the revocation "no live session").
            #expect(try await setup.admin(["sessions", "list", "--user", first.userID.uppercased()]).standardOutput == listed.standardOutput)
            #expect(try await setup.admin(["sessions", "list", "--user", "nobody"]).status == 1)

            let revoked = try await setup.admin(["sessions", "revoke", first.sessionID.uppercased()])
            #expect(revoked.status == 0, "\(revoked.standardError)")
            let elapsed = try #require(try await setup.refusedAfter(first.access), "the gateway kept accepting a revoked session's token")
            #expect(elapsed < .seconds(3), "refused after \(elapsed)")
            #expect(try await setup.proxyStatus(second.access) == 200, "the user's other session is untouched")
            let after = try await setup.admin(["sessions", "list", "--user", first.userID, "--json"])
            let sessions = try #require(try JSONValue.parse(Array(after.standardOutput.utf8)).objectValue?["sessions"]?.arrayValue)
            #expect(sessions.compactMap { $0.objectValue?["id"]?.stringValue } == [second.sessionID])

            let inspected = try await setup.admin(["tokens", "inspect", first.access])
            #expect(
                inspected.standardOutput.contains("verdict: valid") && inspected.standardOutput.contains("session: revoked or ended"),
                "\(inspected.standardOutput)")
            let again = try await setup.admin(["sessions", "revoke", first.sessionID])
            #expect(again.status == 1, "revoking a session that is gone is refused")
        }
    }

    @Test("sessions revoke-user ends every session of the user and none of another user's")
    func revokeUser() async throws {
        try await withSetup { setup in
            let alice = [try await setup.signIn("alice"), try await setup.signIn("alice")]
            let bob = try await setup.signIn("bob")
            let result = try await setup.admin(["sessions", "revoke-user", alice[0].userID])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.contains("2 session(s) ended"))
            for session in alice {
                let elapsed = try #require(try await setup.refusedAfter(session.access))
                #expect(elapsed < .seconds(3), "refused after \(elapsed)")
            }
            #expect(try await setup.proxyStatus(bob.access) == 200)
            let listed = try await setup.admin(["sessions", "list", "--user", alice[0].userID, "--json"])
            #expect(try JSONValue.parse(Array(listed.standardOutput.utf8)).objectValue?["sessions"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test("users invite creates a user by email that the first sign-in vouching for the email joins; a held email is exit 1, a malformed one 2")
    func invite() async throws {
        try await withSetup { setup in
            let invited = try await setup.admin(["users", "invite", "Dave@Example.com", "--confirmed", "--json"])
            #expect(invited.status == 0, "\(invited.standardError)")
            let user = try #require(try JSONValue.parse(Array(invited.standardOutput.utf8)).objectValue)
            #expect(user["email"] == "dave@example.com")
            #expect(user["email_confirmed_at"]?.stringValue != nil)
            let again = try await setup.admin(["users", "invite", "dave@example.com"])
            #expect(again.status == 1)
            #expect(again.standardError.contains("another user holds dave@example.com"))
            #expect(try await setup.admin(["users", "invite", "not an email"]).status == 2)
            let dave = try await setup.signIn("dave", email: "dave@example.com")
            #expect(dave.userID == user["id"]?.stringValue)
            let audit = try await setup.admin(["audit", "--user", dave.userID, "--json"])
            #expect(audit.standardOutput.contains("user_signedup") && audit.standardOutput.contains("cli:"), "\(audit.standardOutput)")
        }
    }

    @Test("users ban refuses the user's tokens at once and new sign-ins; --lift lets it sign in again; show and list find it")
    func banAndLift() async throws {
        try await withSetup { setup in
            let carol = try await setup.signIn("carol")
            let show = try await setup.admin(["users", "show", "fake:carol", "--json"])
            #expect(show.status == 0, "\(show.standardError)")
            #expect(try JSONValue.parse(Array(show.standardOutput.utf8)).objectValue?["id"]?.stringValue == carol.userID)

            let banned = try await setup.admin(["users", "ban", carol.userID, "--for", "24h"])
            #expect(banned.status == 0, "\(banned.standardError)")
            let elapsed = try #require(try await setup.refusedAfter(carol.access))
            #expect(elapsed < .seconds(3), "refused after \(elapsed)")
            #expect(try await setup.signInStatus("carol") == 403, "a banned user cannot sign in")

            let lifted = try await setup.admin(["users", "ban", carol.userID, "--lift"])
            #expect(lifted.status == 0)
            // The ban voids tokens issued up to its second (token times are whole seconds), so the
            // proxy takes a new token once it is issued in a later second.
            let clock = ContinuousClock()
            let start = clock.now
            var accepted = false
            while !accepted, clock.now - start < .seconds(3) {
                accepted = try await setup.proxyStatus(try await setup.signIn("carol").access) == 200
            }
            #expect(accepted, "after --lift the user's new tokens must be accepted")

            let list = try await setup.admin(["users", "list", "--provider", "fake", "--json"])
            let ids = try JSONValue.parse(Array(list.standardOutput.utf8)).objectValue?["users"]?.arrayValue?.compactMap {
                $0.objectValue?["id"]?.stringValue
            }
            #expect(ids == [carol.userID])
        }
    }

    /// A follower printed each batch newest first, and into a file or pipe its lines waited in
    /// standard output's buffer (4 KiB) until it exited: a stopped follower lost them.
    @Test("audit --follow --json: lines oldest first, each batch written as it is read, while the follower runs")
    func auditFollow() async throws {
        try await withSetup { setup in
            _ = try await setup.signIn("frank")
            let follower = try AuditFollowerProcess(config: setup.config)
            defer { follower.stop() }
            func times() -> [String] { follower.field("created_at") }
            try await follower.waitUntil("the follower prints the trail so far") { !times().isEmpty }
            let before = times().count
            for name in ["grace", "heidi", "ivan"] { _ = try await setup.signIn(name) }
            try await follower.waitUntil("the follower prints the three sign-ups while it runs") { times().count >= before + 3 }
            #expect(times() == times().sorted(), "oldest first: \(times())")
        }
    }

    /// A follower stopped at the first failed poll: a Redis restart or failover ended it, and
    /// what was written while its supervisor restarted it was missed (or, resumed with
    /// `--since`, printed twice).
    @Test("audit --follow outlives a Redis restart: it says so on standard error and goes on from its last event")
    func auditFollowOutlivesRedis() async throws {
        try await withRedisServer { redis in
            try await withSetup(redis: redis.url) { setup in
                _ = try await setup.signIn("judy")
                let follower = try AuditFollowerProcess(config: setup.config)
                defer { follower.stop() }
                try await follower.waitUntil("the follower prints the trail so far") { !follower.ids().isEmpty }
                let before = follower.ids().count
                await redis.kill()
                try await follower.waitUntil("the follower says the store is away") {
                    follower.errors().contains("audit: the store is unavailable")
                }
                #expect(follower.isRunning, "the follower ended with Redis: \(follower.errors())")
                try await redis.start()
                try await waitUntil("the gateway signs in again", deadline: .seconds(20)) { try await setup.signInStatus("kim") == 200 }
                try await follower.waitUntil("the follower prints what was written after the restart", deadline: .seconds(20)) {
                    follower.ids().count > before
                }
                #expect(follower.errors().contains("audit: the store answers again"), "\(follower.errors())")
            }
        }
    }

    /// Started on an empty trail, the follower began after this host's clock, read after its
    /// first read: an event written in between was skipped, and so was every event while Redis's
    /// clock (which stream ids are) ran behind the operator's host.
    @Test("audit --follow on an empty trail prints the first event written, whatever Redis's clock says")
    func auditFollowFromAnEmptyTrail() async throws {
        try await withRedisServer { redis in
            try await withSetup(redis: redis.url) { setup in
                let follower = try AuditFollowerProcess(config: setup.config)
                defer { follower.stop() }
                // Its first poll (XRANGE) comes after its start position is taken.
                try await follower.waitUntil("the follower polls") {
                    try await SentinelCluster.info(redis.port, "commandstats").contains("cmdstat_xrange:")
                }
                // An event with the id Redis gives it when its clock is an hour behind this host's.
                let event = AuditEvent.now("logout", userID: UUID().uuidString.lowercased(), detail: ["n": "1"])
                let hourAgo = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
                _ = try await SentinelCluster.command(
                    redis.port,
                    RedisCommand("XADD", .string(setup.prefix + "audit"), .string("\(hourAgo)-0"), "e", .byteArray(event.encoded())))
                try await follower.waitUntil("the follower prints the event") { follower.ids() == ["\(hourAgo)-0"] }
            }
        }
    }

    /// The trail keeps about the newest 100,000 events: a follower further behind than that (an
    /// outage, a slow pipe) skipped what was dropped and said nothing.
    @Test("audit --follow says when the event it had reached left the trail before it read on, and goes on")
    func auditFollowSaysWhatWasDropped() async throws {
        try await withSetup { setup in
            _ = try await setup.signIn("lena")
            let follower = try AuditFollowerProcess(config: setup.config)
            defer { follower.stop() }
            try await follower.waitUntil("the follower prints the trail so far") { !follower.ids().isEmpty }
            let reached = try #require(follower.ids().last)
            // What 100,000 newer events would do, at once: the trail's oldest entries dropped.
            let trail = setup.prefix + "audit"
            let client = RedisClient(configuration: .init(url: try await SharedRedis.url(), poolSize: 1), logger: Logger(label: "test"))
            try await client.send(RedisCommand("XTRIM", .string(trail), "MAXLEN", 0))
            await client.shutdown()
            _ = try await setup.signIn("mona")
            try await follower.waitUntil("the follower prints the event written after the drop") {
                follower.ids().count > 1 && follower.ids().last != reached
            }
            let errors = follower.errors()
            #expect(errors.contains("audit: event \(reached) left the trail"), "\(errors)")
            #expect(errors.components(separatedBy: "left the trail").count == 2, "said once: \(errors)")
            #expect(follower.isRunning)
        }
    }

    @Test("audit shows the gateway's and the CLI's events with their actors; revocations list shows the outbox, never a token")
    func auditAndRevocations() async throws {
        try await withSetup { setup in
            let erin = try await setup.signIn("erin")
            let banned = try await setup.admin(["users", "ban", erin.userID.uppercased(), "--for", "1h"])
            #expect(banned.status == 0, "\(banned.standardError)")
            // The gateway writes its events within 200 ms; the CLI writes its own before it exits.
            var actions: [String: String] = [:]
            try await waitUntil("the sign-up and the ban are in the trail") {
                let audit = try await setup.admin(["audit", "--user", erin.userID, "--json"])
                actions = [:]
                for line in audit.standardOutput.split(separator: "\n") {
                    let payload = try JSONValue.parse(Array(line.utf8)).objectValue?["payload"]?.objectValue
                    if let action = payload?["action"]?.stringValue { actions[action] = payload?["actor_id"]?.stringValue }
                }
                return actions["user_signedup"] != nil && actions["user_banned"] != nil
            }
            #expect(actions["user_signedup"] == erin.userID)
            #expect(actions["user_banned"]?.hasPrefix("cli:") == true, "\(actions)")
            let table = try await setup.admin(["audit", "--since", "1h", "--limit", "5"])
            #expect(table.status == 0 && table.standardOutput.hasPrefix("TIME"), "\(table.standardOutput)")
            #expect(try await setup.admin(["audit", "--since", "yesterday"]).status == 2)
            // The user id in capitals finds the same events; what is not a user id is refused.
            let lower = try await setup.admin(["audit", "--user", erin.userID, "--json"]).standardOutput
            let upper = try await setup.admin(["audit", "--user", erin.userID.uppercased(), "--json"]).standardOutput
            #expect(!lower.isEmpty && upper == lower, "\(upper) against \(lower)")
            #expect(try await setup.admin(["audit", "--user", "erin"]).status == 2)

            let client = RedisClient(configuration: .init(url: try await SharedRedis.url(), poolSize: 1), logger: Logger(label: "cli-test"))
            let store = RedisAuthStore(redis: client, keyPrefix: setup.prefix)
            var entry = ProviderRevocation(
                id: UUID().uuidString, provider: "apple", clientID: "com.example.app", subject: "s-1", userID: erin.userID,
                sealedToken: "v1.SEALED-TOKEN-BYTES", createdAt: Date())
            entry.failedAt = Date()
            entry.lastError = "provider_rejected: apple revoke: HTTP 400 invalid_request"
            try await store.enqueueProviderRevocations([entry])
            await client.shutdown()
            let listed = try await setup.admin(["revocations", "list", "--failed", "--json"])
            #expect(listed.status == 0, "\(listed.standardError)")
            let revocations = try JSONValue.parse(Array(listed.standardOutput.utf8)).objectValue?["revocations"]?.arrayValue ?? []
            #expect(revocations.count == 1 && revocations.first?.objectValue?["state"] == "failed")
            #expect(!listed.standardOutput.contains("SEALED-TOKEN"), "the sealed token is never printed")
            let plain = try await setup.admin(["revocations", "list"])
            #expect(plain.standardOutput.contains("failed") && plain.standardOutput.contains("invalid_request"))
        }
    }

    @Test("keys list shows the active key in the JWKS; tokens service-role mints a token that tokens inspect finds valid")
    func keysAndTokens() async throws {
        try await withSetup { setup in
            let keys = try await setup.admin(["keys", "list", "--json"])
            #expect(keys.status == 0, "\(keys.standardError)")
            let first = try JSONValue.parse(Array(keys.standardOutput.utf8)).objectValue?["keys"]?.arrayValue?.first?.objectValue
            #expect(first?["kid"] == "k1" && first?["state"] == "active" && first?["in_jwks"] == .bool(true))
            let minted = try await setup.admin(["tokens", "service-role", "--ttl", "10m"])
            #expect(minted.status == 0, "\(minted.standardError)")
            let token = minted.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            let inspected = try await setup.admin(["tokens", "inspect", token, "--json"])
            let document = try JSONValue.parse(Array(inspected.standardOutput.utf8)).objectValue
            #expect(document?["verdict"] == "valid")
            #expect(document?["claims"]?.objectValue?["role"] == "service_role")
            let tampered = try await setup.admin(["tokens", "inspect", TamperedToken.signatureChanged(token)])
            #expect(tampered.status == 1 && tampered.standardOutput.contains("verdict: invalid"), "\(tampered.standardOutput)")
        }
    }

    @Test("usage and store errors have their exit codes: 2 for a bad argument or configuration, 1 for an unknown user or Redis down")
    func exitCodes() async throws {
        try await withSetup { setup in
            #expect(try await setup.admin(["users", "ban", "x", "--for", "soon"]).status == 2)
            #expect(try await setup.admin(["users", "show", "nobody@example.com"]).status == 1)
            #expect(try await setup.admin(["users", "delete", UUID().uuidString.lowercased()]).status == 1)
            let memory = try await AuthGateBinary.run(["sessions", "list", "--user", "x"])
            #expect(memory.status == 2, "the memory store cannot be administered from outside")
            let down = try await AuthGateBinary.run(
                ["sessions", "list", "--user", "x", "--config", setup.config.path],
                environment: ["AUTHGATE_STORE_REDIS_URL": "redis://127.0.0.1:\(try freeLoopbackPort())/0"]
            )
            #expect(down.status == 1)
            #expect(down.standardError.contains("Redis unreachable"))
        }
    }
}

/// `authgate audit --follow --json` running beside a test, its output and errors in files.
private final class AuditFollowerProcess {
    private let process = Process()
    private let directory: URL
    private let output: URL
    private let errorOutput: URL

    init(config: URL) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-follow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        (output, errorOutput) = (directory.appendingPathComponent("out"), directory.appendingPathComponent("err"))
        for file in [output, errorOutput] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        process.executableURL = try AuthGateBinary.url()
        process.arguments = ["audit", "--follow", "--json", "--config", config.path]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errorOutput)
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// ``AuthGateTestSupport/waitUntil(_:deadline:_:)``, failing with what the follower wrote to
    /// standard error and whether it still runs.
    func waitUntil(_ what: String, deadline: Duration = .seconds(15), _ condition: () async throws -> Bool) async throws {
        do {
            try await AuthGateTestSupport.waitUntil(what, deadline: deadline, condition)
        } catch {
            let state = process.isRunning ? "runs" : "exited with \(process.terminationStatus)"
            throw TestSupportError("\(error); the follower \(state); its standard error: \(errors())")
        }
    }

    /// The ids of the events printed so far, in order.
    func ids() -> [String] { field("id") }

    /// One field of each event printed so far, in order.
    func field(_ name: String) -> [String] {
        text(output).split(separator: "\n").compactMap { line in (try? JSONValue.parse(Array(line.utf8)))?.objectValue?[name]?.stringValue }
    }

    /// What it wrote to standard error so far.
    func errors() -> String { text(errorOutput) }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    private func text(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }
}
