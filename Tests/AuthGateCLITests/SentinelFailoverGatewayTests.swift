import AuthGateCore
import AuthGateTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `authgate serve` on a Redis master watched by three Sentinels: the master is killed while a
/// client keeps refreshing and calling the proxy.
@Suite("Gateway through a Redis failover", .serialized, .timeLimit(.minutes(10)))
struct SentinelFailoverGatewayTests {
    /// One client round: when it ran and whether its refresh and proxy call succeeded.
    struct Round: Sendable {
        /// When the round began and ended: one that straddles the kill belongs to neither side.
        let at: ContinuousClock.Instant
        let ended: ContinuousClock.Instant
        let ok: Bool
        let detail: String
    }

    @Test("the master dies: after the failover the same session keeps working, and errors stay inside the failover window")
    func failover() async throws {
        let cluster = try await SentinelCluster.start()
        let upstream = try await EchoUpstream.start()
        let files = try GatewayFiles("failover")
        defer { files.remove() }
        let nodes = cluster.sentinels.map { "\"127.0.0.1:\($0.port)\"" }.joined(separator: ", ")
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            store:
              kind: redis
              redis:
                url: "redis://127.0.0.1:1/0"
                connect_timeout: 500ms
                command_timeout: 1s
                sentinel: { master_name: \(SentinelCluster.masterName), nodes: [\(nodes)] }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ], refresh: { reuse_interval: 10s } }
            providers: { anonymous: { enabled: true } }
            rate_limits: { token: off, signup: off, nonce: off }
            routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true } ]
            logging: { level: warning }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        func call(_ method: String, _ path: String, token: String? = nil, json: String? = nil) async -> (Int, [String: JSONValue]) {
            guard
                let (data, response) = try? await HTTP.send(
                    URL(string: "http://127.0.0.1:\(server.port)\(path)")!, method: method,
                    headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], json: json
                )
            else { return (0, [:]) }
            return (response.statusCode, (try? JSONValue.parse(Array(data)).objectValue) ?? [:])
        }
        let rounds = Mutex<[Round]>([])
        let stop = Atomic<Bool>(false)
        do {
            let (status, session) = await call("POST", "/auth/v1/signup", json: "{}")
            try #require(status == 200)
            let firstRefresh = try #require(session["refresh_token"]?.stringValue)
            let firstAccess = try #require(session["access_token"]?.stringValue)
            try await cluster.waitForReplication()

            // The client: refresh (falling back to the previous refresh token when the newest was
            // written to the old master too late to reach the replica), then call the proxy.
            let client = Task {
                var tokens = (current: firstRefresh, previous: firstRefresh, access: firstAccess)
                while !stop.load(ordering: .relaxed) {
                    let started = ContinuousClock.now
                    var (status, body) = await call(
                        "POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(tokens.current)\"}")
                    if status == 400, tokens.previous != tokens.current {
                        (status, body) = await call(
                            "POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(tokens.previous)\"}")
                    }
                    var ok = false
                    var detail = "refresh \(status) \(body["error_code"]?.stringValue ?? "")"
                    if status == 200, let access = body["access_token"]?.stringValue, let next = body["refresh_token"]?.stringValue {
                        tokens = (next, tokens.current, access)
                        let (proxied, _) = await call("GET", "/api/x", token: access)
                        ok = proxied == 200
                        detail = "proxy \(proxied)"
                    }
                    rounds.withLock { $0.append(Round(at: started, ended: .now, ok: ok, detail: detail)) }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            let clock = ContinuousClock()
            try await cluster.waitUntil("five good rounds before the failover") { rounds.withLock { $0.filter(\.ok).count } >= 5 }
            try await cluster.waitForReplication()
            let killing = clock.now
            await cluster.master.kill()
            let killed = clock.now
            try await cluster.waitUntil("ten good rounds after the failover") {
                rounds.withLock { $0.filter { $0.ok && $0.at > killed }.count } >= 10
            }
            stop.store(true, ordering: .relaxed)
            await client.value

            let all = rounds.withLock { $0 }
            let before = all.filter { $0.ended < killing }
            let failedBefore = before.filter { !$0.ok }.map(\.detail)
            #expect(failedBefore.isEmpty, "errors before the master died: \(failedBefore)")
            let after = all.filter { $0.at > killed }
            let recovered = try #require(after.firstIndex { $0.ok })
            let lateFailures = after[recovered...].filter { !$0.ok }.map(\.detail)
            // After the first good round, every later round is good: errors are confined to the window.
            #expect(lateFailures.isEmpty, "errors after recovery: \(lateFailures)")
            let window = after[recovered].at - killed
            #expect(window < .seconds(15), "the failover window lasted \(window)")
            print("failover window: \(window); failed rounds inside it: \(after[..<recovered].count)")
        } catch {
            stop.store(true, ordering: .relaxed)
            _ = await server.stop()
            await upstream.stop()
            await cluster.stop()
            throw error
        }
        _ = await server.stop()
        await upstream.stop()
        await cluster.stop()
    }
}
