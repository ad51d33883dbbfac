import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A dependency that is down fails every request the same way, and anyone can send requests: the
/// log says so once per 10 s with the number held back, not once per request (edge safety: log
/// volume). Every request keeps its answer and its access line.
@Suite("Outage log lines", .timeLimit(.minutes(2)))
struct OutageLogTests {
    /// Before, each request to a dead upstream wrote `upstream failed` and each `/readyz` (often
    /// public) with Redis down wrote `readiness: store unavailable`.
    @Test("a dead upstream and a dead store: 100 requests to each, their warning lines once per 10 s with a count, every request answered")
    func oncePerInterval() async throws {
        let files = try GatewayFiles("outage-log")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1 }
            store: { kind: redis, redis: { url: "redis://127.0.0.1:\(try freeLoopbackPort())" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            routes:
              - { name: dead, path_prefix: /dead/, upstreams: ["http://127.0.0.1:\(try freeLoopbackPort())"], auth: public }
            logging: { level: info }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<100 {
            let (_, dead) = try await HTTP.get(HTTP.loopbackURL(port: server.port, path: "/dead/\(index)"))
            #expect(dead.statusCode == 502)
            let (_, ready) = try await HTTP.get(HTTP.loopbackURL(port: server.port, path: "/readyz"))
            #expect(ready.statusCode == 503)
        }
        let elapsed = clock.now - started
        #expect(await server.stop() == 0)
        let lines = server.log.split(separator: "\n")
        let allowed = 1 + Int(elapsed / .seconds(10))
        for message in ["upstream failed", "readiness: store unavailable"] {
            let count = lines.filter { $0.contains("\"msg\":\"\(message)\"") }.count
            #expect(count >= 1 && count <= allowed, "\(count) '\(message)' lines for 100 requests in \(elapsed)")
        }
        // The access lines still record each request.
        #expect(lines.filter { $0.contains("\"gw.route\":\"dead\"") && $0.contains("\"gw.status\":\"502\"") }.count == 100)
    }
}
