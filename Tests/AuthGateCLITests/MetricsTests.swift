import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/metrics` of a running `authgate serve` after traffic of every kind.
@Suite("Metrics", .serialized, .timeLimit(.minutes(3)))
struct MetricsTests {
    @Test("every metric family is there with non-zero counts after traffic, on the separate metrics port; no label holds a user id or token")
    func families() async throws {
        let files = try GatewayFiles("metrics")
        defer { files.remove() }
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let upstream = try await EchoUpstream.start()
        let metricsPort = try freeLoopbackPort()
        let config = files.config
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com", metrics_port: \(metricsPort) }
            store: { kind: redis, redis: { url: "\(try await SharedRedis.url())", key_prefix: "metrics-\(UInt32.random(in: 0...UInt32.max)):" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ], refresh: { reuse_interval: 0s } }
            providers:
              anonymous: { enabled: true }
              oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
            rate_limits: { token: off, signup: off, nonce: off }
            routes:
              - { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true }
              - { name: dead, path_prefix: /dead/, upstreams: ["http://127.0.0.1:\(try freeLoopbackPort())"], auth: public }
            logging: { level: warning }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", config.path])
        func call(_ method: String, _ path: String, token: String? = nil, json: String? = nil) async throws -> (Int, [String: JSONValue]) {
            let (data, response) = try await HTTP.send(
                URL(string: "http://127.0.0.1:\(server.port)\(path)")!, method: method,
                headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], json: json
            )
            return (response.statusCode, (try? JSONValue.parse(Array(data)).objectValue) ?? [:])
        }
        var text = ""
        var userID = ""
        var access = ""
        do {
            let now = Int64(Date().timeIntervalSince1970)
            let good = FakeProvider.token(
                claims: [
                    "iss": .string(provider.issuer), "aud": "app", "sub": "metrics-user", "iat": .integer(now), "exp": .integer(now + 600),
                    "jti": "m1"
                ],
                key: FakeProvider.sharedKeys[0]
            )
            let expired = FakeProvider.token(
                claims: [
                    "iss": .string(provider.issuer), "aud": "app", "sub": "metrics-user", "iat": .integer(now - 7200), "exp": .integer(now - 3600)
                ],
                key: FakeProvider.sharedKeys[0]
            )
            let (status, session) = try await call(
                "POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"fake\",\"id_token\":\"\(good)\"}")
            try #require(status == 200)
            #expect(
                try await call("POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"fake\",\"id_token\":\"\(expired)\"}").0 == 400)
            #expect(
                try await call("POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"made-up\",\"id_token\":\"\(good)\"}").0 != 200)
            access = try #require(session["access_token"]?.stringValue)
            userID = try #require(session["user"]?.objectValue?["id"]?.stringValue)
            let refresh = try #require(session["refresh_token"]?.stringValue)
            #expect(try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}").0 == 200)
            #expect(try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}").0 == 400)
            for _ in 0..<3 { #expect(try await call("GET", "/api/x", token: access).0 != 200, "the reuse revoked the session") }
            let (_, anonymous) = try await call("POST", "/auth/v1/signup", json: "{}")
            let anonymousToken = try #require(anonymous["access_token"]?.stringValue)
            // Minted by this gateway, so every proxied request with it is a cache hit, the first one too.
            for _ in 0..<3 { #expect(try await call("GET", "/api/x", token: anonymousToken).0 == 200) }
            // A token the gateway never signed: a miss, and refused.
            #expect(try await call("GET", "/api/x", token: "eyJhbGciOiJFUzI1NiJ9.e30.AAAAAAAAAAAAAAAAAAAAAAAA").0 == 401)
            #expect(try await call("GET", "/dead/x").0 == 502)
            _ = try await call("GET", "/readyz")
            #expect(try await call("GET", "/metrics").0 == 404, "with metrics_port set, /metrics is not on the main port")
            let (data, response) = try await HTTP.get(URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!)
            #expect(response.statusCode == 200)
            text = String(decoding: data, as: UTF8.self)
        } catch {
            _ = await server.stop()
            await upstream.stop()
            await provider.stop()
            throw error
        }
        _ = await server.stop()
        await upstream.stop()
        await provider.stop()

        /// The sum of the samples of `name` whose labels contain every one of `labels`.
        func total(_ name: String, _ labels: [String] = []) -> Double {
            text.split(separator: "\n").filter { line in
                !line.hasPrefix("#") && (line.hasPrefix(name + "{") || line.hasPrefix(name + " ")) && labels.allSatisfy { line.contains($0) }
            }.compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
        }
        #expect(total("authgate_http_requests_total", ["route=\"api\"", "status_class=\"2xx\""]) >= 3)
        #expect(total("authgate_http_requests_total", ["route=\"/auth/v1/token\""]) >= 4)
        #expect(total("authgate_http_request_duration_seconds_count") > 0)
        #expect(total("authgate_sign_ins_total", ["provider=\"fake\"", "outcome=\"ok\""]) == 1)
        #expect(total("authgate_sign_ins_total", ["provider=\"fake\"", "outcome=\"expired\""]) == 1)
        #expect(total("authgate_sign_ins_total", ["provider=\"unknown\""]) == 1, "a made-up provider name is not a label value")
        #expect(total("authgate_refresh_total", ["outcome=\"rotated\""]) == 1)
        #expect(total("authgate_refresh_total", ["outcome=\"reuse_revoked\""]) == 1)
        #expect(total("authgate_provider_keyset_fetches_total", ["provider=\"fake\""]) >= 1)
        #expect(text.contains("authgate_provider_keyset_age_seconds{provider=\"fake\"}"))
        #expect(total("authgate_redis_command_duration_seconds_count") > 0)
        #expect(text.contains("authgate_redis_commands_in_flight"))
        #expect(text.contains("authgate_revocation_feed_lag_seconds"))
        #expect(total("authgate_token_cache_lookups_total", ["result=\"hit\""]) >= 3)
        #expect(total("authgate_token_cache_lookups_total", ["result=\"miss\""]) >= 1)
        #expect(total("authgate_upstream_errors_total", ["route=\"dead\"", "kind=\"connect\""]) >= 1)
        #expect(!text.contains(userID) && !text.contains(String(access.prefix(24))), "no user id or token in any label")
    }
}
