import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Tracing on: spans go to an OTLP/HTTP collector and upstreams receive W3C trace context.
@Suite("Tracing", .serialized, .timeLimit(.minutes(3)))
struct TracingTests {
    @Test("refresh, Redis, upstream and request spans reach the collector; the upstream gets a traceparent continuing the client's trace")
    func spansAndPropagation() async throws {
        let collector = try await OTLPCollector.start()
        let upstream = try await EchoUpstream.start()
        let files = try GatewayFiles("tracing")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            store: { kind: redis, redis: { url: "\(try await SharedRedis.url())", key_prefix: "tracing-\(UInt32.random(in: 0...UInt32.max)):" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers: { anonymous: { enabled: true } }
            rate_limits: { token: off, signup: off, nonce: off }
            routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true } ]
            tracing: { enabled: true, endpoint: "\(collector.endpoint)", service_name: authgate-test }
            logging: { level: warning }
            """)
        // Export every 100 ms instead of every 5 s.
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], environment: ["OTEL_BSP_SCHEDULE_DELAY": "100"])
        func call(_ method: String, _ path: String, headers: [String: String] = [:], json: String? = nil) async throws -> [String: JSONValue] {
            let (data, _) = try await HTTP.send(URL(string: "http://127.0.0.1:\(server.port)\(path)")!, method: method, headers: headers, json: json)
            return (try? JSONValue.parse(Array(data)).objectValue) ?? [:]
        }
        do {
            let session = try await call("POST", "/auth/v1/signup", json: "{}")
            let refresh = try #require(session["refresh_token"]?.stringValue)
            let rotated = try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}")
            let access = try #require(rotated["access_token"]?.stringValue)
            let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
            let echo = try await call(
                "GET", "/api/x", headers: ["Authorization": "Bearer \(access)", "traceparent": "00-\(traceID)-00f067aa0ba902b7-01"]
            )
            let traceparent = try #require(echo["headers"]?.objectValue?["traceparent"]?.stringValue)
            let parts = traceparent.split(separator: "-")
            #expect(parts.count == 4 && parts[1] == traceID, "the upstream's traceparent continues the client's trace: \(traceparent)")
            #expect(parts.count == 4 && parts[2] != "00f067aa0ba902b7", "with a span of AuthGate's own as parent")

            let clock = ContinuousClock()
            let start = clock.now
            let expected = ["auth.refresh", "proxy.upstream", "redis ", "authgate-test"]
            while !expected.allSatisfy(collector.hasReceived), clock.now - start < .seconds(15) {
                try await Task.sleep(for: .milliseconds(100))
            }
            for name in expected { #expect(collector.hasReceived(name), "no \(name) in the exported spans") }
            #expect(!collector.hasReceived(access) && !collector.hasReceived(refresh), "no token in any span")
        } catch {
            _ = await server.stop()
            await upstream.stop()
            await collector.stop()
            throw error
        }
        #expect(await server.stop() == 0)
        await upstream.stop()
        await collector.stop()
    }
}
