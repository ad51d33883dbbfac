import AuthGateCore
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
    @Test(
        "a dead upstream, a dead store, junk and keyless Apple notifications: 100 requests each, their lines once per 10 s with a count, every request answered"
    )
    func oncePerInterval() async throws {
        let files = try GatewayFiles("outage-log")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1 }
            store: { kind: redis, redis: { url: "redis://127.0.0.1:\(try freeLoopbackPort())" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers: { apple: { enabled: true, audiences: [com.example.app], jwks_url: "http://127.0.0.1:\(try freeLoopbackPort())/keys" } }
            routes:
              - { name: dead, path_prefix: /dead/, upstreams: ["http://127.0.0.1:\(try freeLoopbackPort())"], auth: public }
            logging: { level: info }
            """)
        // Apple's notification endpoint is open to anyone: junk, and a token whose keys cannot be
        // loaded (Apple unreachable).
        let unsigned = FakeProvider.unsignedToken(header: ["alg": "RS256", "kid": "k1"], claims: ["iss": "https://appleid.apple.com"])
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<100 {
            let (_, dead) = try await HTTP.get(HTTP.loopbackURL(port: server.port, path: "/dead/\(index)"))
            #expect(dead.statusCode == 502)
            let (_, ready) = try await HTTP.get(HTTP.loopbackURL(port: server.port, path: "/readyz"))
            #expect(ready.statusCode == 503)
            let notifications = HTTP.loopbackURL(port: server.port, path: "/auth/v1/apple/notifications")
            let (_, junk) = try await HTTP.send(notifications, method: "POST", json: "{\"payload\":\"junk-\(index)\"}")
            #expect(junk.statusCode == 400)
            let (_, keyless) = try await HTTP.send(notifications, method: "POST", json: "{\"payload\":\"\(unsigned)\"}")
            #expect(keyless.statusCode == 503)
        }
        let elapsed = clock.now - started
        #expect(await server.stop() == 0)
        let lines = server.log.split(separator: "\n")
        let allowed = 1 + Int(elapsed / .seconds(10))
        for message in ["upstream failed", "readiness: store unavailable", "apple notification refused", "apple notification not handled"] {
            let count = lines.filter { $0.contains("\"msg\":\"\(message)\"") }.count
            #expect(count >= 1 && count <= allowed, "\(count) '\(message)' lines for 100 requests in \(elapsed)")
        }
        // The access lines still record each request, a refused notification with its reason.
        #expect(lines.filter { $0.contains("\"gw.route\":\"dead\"") && $0.contains("\"gw.status\":\"502\"") }.count == 100)
        let refusals = lines.filter { $0.contains("\"gw.path\":\"/auth/v1/apple/notifications\"") && $0.contains("\"gw.status\":\"400\"") }
        #expect(refusals.count == 100 && refusals.allSatisfy { $0.contains("\"gw.outcome\":") }, "\(refusals.prefix(1))")
    }
}
