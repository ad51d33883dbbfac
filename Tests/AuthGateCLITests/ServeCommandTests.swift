import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `authgate serve` through the real executable.
@Suite("authgate serve")
struct ServeCommandTests {
    @Test("development defaults: serves /health, warns loudly, logs JSON with request ids, stops cleanly on SIGTERM")
    func developmentMode() async throws {
        let server = try await AuthGateServer.start()
        let (data, response) = try await HTTP.get(server.baseURL.appendingPathComponent("auth/v1/health"), headers: ["X-Request-Id": "probe-1"])
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self).contains("\"name\":\"GoTrue\""))
        let (_, ready) = try await HTTP.get(server.baseURL.appendingPathComponent("readyz"))
        #expect(ready.statusCode == 200)
        let status = await server.stop(signal: SIGTERM)
        #expect(status == 0)
        let log = server.log
        #expect(log.contains("DEVELOPMENT MODE"))
        let requestLine = log.split(separator: "\n").first { $0.contains("\"gw.request_id\":\"probe-1\"") }
        let line = try #require(requestLine)
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(object?["gw.path"] == "/auth/v1/health")
        #expect(object?["gw.status"] == "200")
        #expect(log.contains("\"msg\":\"authgate stopped\""))
    }

    @Test("with Redis: ready while Redis answers")
    func redisStore() async throws {
        let redisURL = try await SharedRedis.url()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A P-256 private key in PEM form, made by the test itself.
        let key = directory.appendingPathComponent("k1.pem")
        try TestKeys.es256PEM().write(to: key, atomically: true, encoding: .utf8)
        let config = directory.appendingPathComponent("authgate.yaml")
        try """
        store: { kind: redis, redis: { url: "\(redisURL)" } }
        tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
        """.write(to: config, atomically: true, encoding: .utf8)
        let server = try await AuthGateServer.start(arguments: ["--config", config.path])
        let (data, ready) = try await HTTP.get(server.baseURL.appendingPathComponent("readyz"))
        #expect(ready.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
        #expect(String(decoding: data, as: UTF8.self).contains("active kid k1"))
        #expect(await server.stop() == 0)
        #expect(!server.log.contains("DEVELOPMENT MODE"))
    }

    @Test("an invalid configuration stops serve with exit 2 and the problem named")
    func invalidConfiguration() async throws {
        let result = try await AuthGateBinary.run(["serve"], environment: ["AUTHGATE_STORE_KIND": "cassandra"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("store.kind: \"cassandra\" is not one of memory, redis"))
    }
}
