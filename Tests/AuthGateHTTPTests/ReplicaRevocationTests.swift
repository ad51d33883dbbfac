import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Two `authgate serve` processes on one Redis, as replicas run in production.
@Suite("Revocation across replicas", .serialized, .timeLimit(.minutes(3)))
struct ReplicaRevocationTests {
    static let trials = 100

    @Test("a session logged out (or a user deleted) through one replica is refused by the other within 3 s, 100 (and 10) times out of 100 (10)")
    func revokedEverywhereWithinASecond() async throws {
        let upstream = try await EchoUpstream.start()
        let redisURL = try await SharedRedis.url()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replicas-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestKeys.es256PEM().write(to: directory.appendingPathComponent("k1.pem"), atomically: true, encoding: .utf8)
        let config = directory.appendingPathComponent("authgate.yaml")
        try """
        server: { host: 127.0.0.1, public_url: "https://api.example.com" }
        store: { kind: redis, redis: { url: "\(redisURL)", key_prefix: "replicas-\(UInt32.random(in: 0...UInt32.max)):" } }
        tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
        providers: { anonymous: { enabled: true } }
        rate_limits: { token: off, signup: off, nonce: off }
        users: { allow_self_delete: true }
        routes:
          - { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true }
        logging: { level: warning }
        """.write(to: config, atomically: true, encoding: .utf8)
        let first = try await AuthGateServer.start(arguments: ["--config", config.path])
        let second = try await AuthGateServer.start(arguments: ["--config", config.path])
        let client = HTTPClient(eventLoopGroupProvider: .singleton)

        func call(_ server: AuthGateServer, _ method: HTTPMethod, _ path: String, token: String? = nil) async throws -> (
            HTTPResponseStatus, ByteBuffer
        ) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)\(path)")
            request.method = method
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            let response = try await client.execute(request, timeout: .seconds(10))
            return (response.status, try await response.body.collect(upTo: 1 << 20))
        }

        /// How long after now the second replica starts refusing `token` (polled for 10 s).
        func refusedAfter(_ token: String) async throws -> Duration? {
            let clock = ContinuousClock()
            let start = clock.now
            while clock.now - start < .seconds(10) {
                if try await call(second, .GET, "/api/x", token: token).0 == .unauthorized { return clock.now - start }
                try await Task.sleep(for: .milliseconds(5))
            }
            return nil
        }

        var slowest = Duration.zero
        do {
            for trial in 1...Self.trials {
                let (status, body) = try await call(first, .POST, "/auth/v1/signup")
                #expect(status == .ok)
                let token = try #require(try JSONValue.parse(Array(body.readableBytesView)).objectValue?["access_token"]?.stringValue)
                let (before, answer) = try await call(second, .GET, "/api/x", token: token)
                #expect(before == .ok, "trial \(trial): \(String(buffer: answer))")
                #expect(try await call(first, .POST, "/auth/v1/logout?scope=local", token: token).0 == .noContent)
                let elapsed = try #require(try await refusedAfter(token), "trial \(trial): the other replica never refused the token")
                #expect(elapsed < .seconds(3), "trial \(trial): refused after \(elapsed)")
                slowest = max(slowest, elapsed)
            }
            // A user signing one of their sessions out ("that iPad") through one replica: the other
            // refuses that session's token.
            do {
                let (_, body) = try await call(first, .POST, "/auth/v1/signup")
                let token = try #require(try JSONValue.parse(Array(body.readableBytesView)).objectValue?["access_token"]?.stringValue)
                let payload = try #require(token.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode($0) })
                let sessionID = try #require(try JSONValue.parse(payload).objectValue?["session_id"]?.stringValue)
                #expect(try await call(second, .GET, "/api/x", token: token).0 == .ok)
                #expect(try await call(first, .DELETE, "/auth/v1/user/sessions/\(sessionID)", token: token).0 == .noContent)
                let elapsed = try #require(try await refusedAfter(token), "the other replica never refused the ended session")
                #expect(elapsed < .seconds(3), "the ended session was refused after \(elapsed)")
            }
            // A user deleting their own account through one replica: the other refuses its token.
            for trial in 1...10 {
                let (_, body) = try await call(first, .POST, "/auth/v1/signup")
                let token = try #require(try JSONValue.parse(Array(body.readableBytesView)).objectValue?["access_token"]?.stringValue)
                #expect(try await call(second, .GET, "/api/x", token: token).0 == .ok)
                #expect(try await call(first, .DELETE, "/auth/v1/user", token: token).0 == .ok)
                let elapsed = try #require(try await refusedAfter(token), "deletion trial \(trial): the other replica never refused the token")
                #expect(elapsed < .seconds(3), "deletion trial \(trial): refused after \(elapsed)")
                slowest = max(slowest, elapsed)
            }
        } catch {
            try? await client.shutdown()
            _ = await first.stop()
            _ = await second.stop()
            await upstream.stop()
            throw error
        }
        print("revocation across replicas: slowest of \(Self.trials) trials \(slowest)")
        try await client.shutdown()
        #expect(await first.stop() == 0)
        #expect(await second.stop() == 0)
        await upstream.stop()
    }
}
