import AuthGateCore
import AuthGateTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Signing-key rotation without downtime, as the runbook in docs/operations.md does it, on two
/// `authgate serve` processes sharing Redis and the configuration file.
@Suite("Key rotation", .serialized, .timeLimit(.minutes(3)))
struct KeyRotationTests {
    /// What the client saw while the keys rotated.
    final class ClientRecord: Sendable {
        let failures = Mutex<[String]>([])
        let rounds = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let token = Mutex<String>("")
    }

    @Test(
        "published, active, retired, removed on two gateways while a client calls and refreshes: zero failed requests; a retired key's token works until removal, then not"
    )
    func rotation() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rotation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestKeys.es256PEM().write(to: directory.appendingPathComponent("k1.pem"), atomically: true, encoding: .utf8)
        try TestKeys.es256PEM().write(to: directory.appendingPathComponent("k2.pem"), atomically: true, encoding: .utf8)
        let upstream = try await EchoUpstream.start()
        let redis = try await SharedRedis.url()
        let config = directory.appendingPathComponent("authgate.yaml")
        let prefix = "rotation-\(UInt32.random(in: 0...UInt32.max)):"
        /// Rewrites the configuration (atomically) with these `tokens.signing_keys` entries.
        func keys(_ keys: String) throws {
            try """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            store: { kind: redis, redis: { url: "\(redis)", key_prefix: "\(prefix)" } }
            tokens: { signing_keys: [ \(keys) ] }
            providers: { anonymous: { enabled: true } }
            rate_limits: { token: off, signup: off, nonce: off }
            routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true } ]
            logging: { level: warning }
            """.write(to: config, atomically: true, encoding: .utf8)
        }
        try keys("{ kid: k1, file: k1.pem, state: active }")
        let a = try await AuthGateServer.start(arguments: ["--config", config.path])
        let b = try await AuthGateServer.start(arguments: ["--config", config.path])
        let gateways = [a, b]

        func call(_ server: AuthGateServer, _ method: String, _ path: String, token: String? = nil, json: String? = nil) async throws -> (
            Int, [String: JSONValue]
        ) {
            let (data, response) = try await HTTP.send(
                URL(string: "http://127.0.0.1:\(server.port)\(path)")!, method: method,
                headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], json: json
            )
            return (response.statusCode, (try? JSONValue.parse(Array(data)).objectValue) ?? [:])
        }
        func kidOf(_ token: String) -> String? {
            Base64URL.decode(token.split(separator: ".")[0]).flatMap { try? JSONValue.parse($0) }?.objectValue?["kid"]?.stringValue
        }
        /// Waits until `condition` holds on both gateways (at most 15 s: the file check runs every 2 s).
        func waitForBoth(_ what: String, _ condition: (AuthGateServer) async throws -> Bool) async throws {
            let clock = ContinuousClock()
            let start = clock.now
            for server in gateways {
                while try await !condition(server) {
                    try #require(clock.now - start < .seconds(15), "\(what) never happened on port \(server.port)")
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
        }
        func jwksKids(_ server: AuthGateServer) async throws -> [String] {
            try await call(server, "GET", "/.well-known/jwks.json").1["keys"]?.arrayValue?.compactMap { $0.objectValue?["kid"]?.stringValue } ?? []
        }

        let (status, session) = try await call(a, "POST", "/auth/v1/signup", json: "{}")
        try #require(status == 200)
        let oldToken = try #require(session["access_token"]?.stringValue)
        #expect(kidOf(oldToken) == "k1")
        let record = ClientRecord()
        record.token.withLock { $0 = oldToken }
        let firstRefresh = try #require(session["refresh_token"]?.stringValue)

        // The client: refresh through one gateway, call the proxy on both, again and again.
        let client = Task {
            var refresh = firstRefresh
            var round = 0
            while !record.stop.load(ordering: .relaxed) {
                let through = gateways[round % 2]
                round += 1
                let (status, body) = try await call(
                    through, "POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}")
                guard status == 200, let access = body["access_token"]?.stringValue, let next = body["refresh_token"]?.stringValue else {
                    record.failures.withLock { $0.append("refresh via \(through.port): \(status) \(body)") }
                    continue
                }
                refresh = next
                record.token.withLock { $0 = access }
                for server in gateways {
                    let (proxied, _) = try await call(server, "GET", "/api/x", token: access)
                    if proxied != 200 { record.failures.withLock { $0.append("proxy \(server.port) with \(kidOf(access) ?? "?"): \(proxied)") } }
                }
                record.rounds.add(1, ordering: .relaxed)
            }
        }
        func roundsGoBy(_ count: Int) async throws {
            let target = record.rounds.load(ordering: .relaxed) + count
            let clock = ContinuousClock()
            let start = clock.now
            while record.rounds.load(ordering: .relaxed) < target {
                try #require(clock.now - start < .seconds(15), "the client stalled")
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        do {
            try await roundsGoBy(3)
            // 1. Publish k2: SIGHUP to one gateway, the other notices the file change.
            try keys("{ kid: k1, file: k1.pem, state: active }, { kid: k2, file: k2.pem, state: published }")
            kill(a.processIdentifier, SIGHUP)
            try await waitForBoth("k2 published") { try await jwksKids($0).contains("k2") }
            try await roundsGoBy(3)
            // 2. Activate k2, retire k1.
            try keys("{ kid: k2, file: k2.pem, state: active }, { kid: k1, file: k1.pem, state: retired }")
            kill(a.processIdentifier, SIGHUP)
            try await waitForBoth("k2 active") { server in
                let (status, body) = try await call(server, "GET", "/readyz")
                return status == 200 && "\(body)".contains("active kid k2")
            }
            try await roundsGoBy(3)
            #expect(kidOf(record.token.withLock { $0 }) == "k2", "new tokens are signed by the active key")
            for server in gateways {
                #expect(try await call(server, "GET", "/api/x", token: oldToken).0 == 200, "a retired key's token works until it expires")
            }
            // 3. Remove k1 once every token it signed is out of use.
            try keys("{ kid: k2, file: k2.pem, state: active }")
            kill(a.processIdentifier, SIGHUP)
            try await waitForBoth("k1 removed") { try await !jwksKids($0).contains("k1") }
            try await roundsGoBy(3)
            for server in gateways {
                #expect(try await call(server, "GET", "/api/x", token: oldToken).0 == 401, "a removed key's token is refused")
            }
        } catch {
            record.stop.store(true, ordering: .relaxed)
            _ = try? await client.value
            _ = await a.stop()
            _ = await b.stop()
            await upstream.stop()
            throw error
        }
        record.stop.store(true, ordering: .relaxed)
        try await client.value
        #expect(record.failures.withLock { $0 } == [], "failed requests during the rotation")
        #expect(record.rounds.load(ordering: .relaxed) >= 12)
        #expect(await a.stop() == 0)
        #expect(await b.stop() == 0)
        await upstream.stop()
    }
}
