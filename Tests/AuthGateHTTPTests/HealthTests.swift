import AuthGateCore
import AuthGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import RedisBridge
import Testing

@testable import AuthGateHTTP

@Suite("Health, readiness and error shapes", .timeLimit(.minutes(3)))
struct HealthTests {
    private func dependencies(store: any AuthStore = MemoryAuthStore(), keyRing: SigningKeyRing? = nil) throws -> GatewayApplication.Dependencies {
        let configuration = try AuthGateConfiguration.parse(yaml: "", baseDirectory: "", environment: [:])
        let ring = try keyRing ?? SigningKeyRing.load(configuration.tokens, allowGenerated: true)
        return .init(configuration: configuration, store: store, keyRing: ring)
    }

    private func application(_ dependencies: GatewayApplication.Dependencies) -> some ApplicationProtocol {
        Application(router: GatewayApplication.buildRouter(dependencies))
    }

    private struct HealthBody: Decodable, Equatable {
        let version: String
        let name: String
        let description: String
    }

    @Test(
        "a served path asked with another method, extension methods included: 405 with Allow (HEAD wherever GET); HEAD answers as GET without a body; unknown paths 404"
    )
    func methodNotAllowed() async throws {
        try await application(dependencies()).test(.router) { client in
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.delete, "/auth/v1/settings", "GET, HEAD"), (.post, "/health", "GET, HEAD"), (.get, "/auth/v1/token", "POST"),
                (.patch, "/auth/v1/user", "DELETE, GET, HEAD, PUT"), (.post, "/auth/v1/admin/users/6d0c1c4e", "DELETE, GET, HEAD, PUT"),
                (.head, "/auth/v1/logout", "POST"), (.trace, "/health", "GET, HEAD"), (.options, "/auth/v1/token", "POST"),
                (try #require(HTTPRequest.Method("QUERY")), "/auth/v1/settings", "GET, HEAD")
            ]
            for (method, path, allow) in cases {
                try await client.execute(uri: path, method: method) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                    #expect(response.headers[.allow] == allow, "\(method) \(path)")
                    #expect(response.headers[.init("x-sb-error-code")!] == "method_not_allowed")
                }
            }
            let settings = try await client.execute(uri: "/auth/v1/settings", method: .get) { $0 }
            try await client.execute(uri: "/auth/v1/settings", method: .head) { response in
                #expect(response.status == .ok && response.body.readableBytes == 0)
                #expect(response.headers[.contentType] == settings.headers[.contentType])
            }
            try await client.execute(uri: "/auth/v1/nope", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/auth/v1/nope", method: .delete) { #expect($0.status == .notFound) }
        }
    }

    @Test("/health and /auth/v1/health answer in GoTrue's shape")
    func health() async throws {
        try await application(dependencies()).test(.router) { client in
            for path in ["/health", "/auth/v1/health"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "application/json")
                    let body = try JSONDecoder().decode(HealthBody.self, from: Data(response.body.readableBytesView))
                    #expect(
                        body
                            == HealthBody(
                                version: GatewayApplication.version, name: "GoTrue",
                                description: "GoTrue is a user registration and authentication API"))
                }
            }
        }
    }

    @Test("/readyz is 200 when the store answers and keys are loaded")
    func ready() async throws {
        try await application(dependencies()).test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(body?["status"] as? String == "ready")
                let checks = body?["checks"] as? [String: String]
                #expect(checks?["store"] == "ok (memory)")
                #expect(checks?["signing_keys"]?.hasPrefix("ok (active kid dev-") == true)
            }
        }
    }

    @Test("/readyz is 200 with a live Redis and 503 with the reason when Redis is unreachable")
    func readinessFollowsRedis() async throws {
        let live = RedisClient(configuration: .init(url: try await SharedRedis.url(), poolSize: 1), logger: Logger(label: "test"))
        try await application(dependencies(store: RedisAuthStore(redis: live, keyPrefix: "ag:"))).test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("ok (redis)"))
            }
        }
        await live.shutdown()

        let dead = RedisClient(
            configuration: .init(url: RedisURL(host: "127.0.0.1", port: try freeLoopbackPort()), poolSize: 1, connectTimeout: .milliseconds(500)),
            logger: Logger(label: "test")
        )
        try await application(dependencies(store: RedisAuthStore(redis: dead, keyPrefix: "ag:"))).test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(body?["status"] as? String == "not_ready")
                let store = (body?["checks"] as? [String: String])?["store"] ?? ""
                #expect(store == "redis unavailable", "the cause goes to the log, not to /readyz: \(store)")
            }
        }
        await dead.shutdown()
    }

    @Test(
        "/readyz is 503 while Redis may evict keys (maxmemory with a policy other than noeviction), 200 once it may not; a user without INFO is told to check"
    )
    func readinessRefusesEvictingRedis() async throws {
        try await withRedisServer(extraArguments: ["--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"]) { redis in
            let client = RedisClient(configuration: .init(url: redis.url, poolSize: 1), logger: Logger(label: "test"))
            let store = RedisAuthStore(redis: client, keyPrefix: "ag:")
            func readiness(_ store: RedisAuthStore) async throws -> (HTTPResponse.Status, String?) {
                try await application(dependencies(store: store)).test(.router) { client -> (HTTPResponse.Status, String?) in
                    try await client.execute(uri: "/readyz", method: .get) { response in
                        let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                        return (response.status, (body?["checks"] as? [String: String])?["store_eviction"])
                    }
                }
            }
            let (evicting, evictingDetail) = try await readiness(store)
            #expect(evicting == .serviceUnavailable)
            #expect(evictingDetail?.contains("maxmemory-policy volatile-lru") == true, "\(String(describing: evictingDetail))")
            for policy in ["allkeys-lru", "allkeys-random", "volatile-ttl", "allkeys-lfu"] {
                try await client.send(RedisCommand("CONFIG", "SET", "maxmemory-policy", .string(policy)))
                #expect(try await readiness(store).0 == .serviceUnavailable, "\(policy)")
            }
            try await client.send(RedisCommand("CONFIG", "SET", "maxmemory-policy", "noeviction"))
            #expect(try await readiness(store) == (.ok, "ok"))
            // Without a limit Redis never evicts, whatever the policy.
            try await client.send(RedisCommand("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"))
            try await client.send(RedisCommand("CONFIG", "SET", "maxmemory", "0"))
            #expect(try await readiness(store) == (.ok, "ok"))
            await client.shutdown()

            // A user that may not run INFO: ready, and told to make sure (Redis's words stay in the log).
            _ = try await SentinelCluster.command(redis.port, RedisCommand("ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "+@all", "-info"))
            var url = redis.url
            url.username = "noinfo"
            url.password = "pw"
            let limited = RedisClient(configuration: .init(url: url, poolSize: 1), logger: Logger(label: "test"))
            let (status, detail) = try await readiness(RedisAuthStore(redis: limited, keyPrefix: "ag:"))
            #expect(status == .ok)
            #expect(detail?.hasPrefix("unknown:") == true && detail?.contains("noinfo") == false, "\(String(describing: detail))")
            await limited.shutdown()
        }
    }

    /// `/readyz` is often public: each call asked Redis for `INFO`, so a flood of them was a flood
    /// of `INFO` on the one shared Redis. The probe's own clock is stepped, so the window is tested
    /// exactly, however slowly the machine runs (a wall-clock version failed under CI load).
    @Test("the eviction answer is reused for 5 s: a burst of /readyz costs Redis one INFO, the next after 5 s another")
    func evictionAnswerReused() async throws {
        try await withRedisServer { redis in
            let client = RedisClient(configuration: .init(url: redis.url, poolSize: 1), logger: Logger(label: "test"))
            let clock = ManualClock()
            let probe = ReadinessProbe(store: RedisAuthStore(redis: client, keyPrefix: "ag:"), keys: nil, now: { clock.now })
            /// INFO calls Redis has counted, less the INFO commandstats that reads them.
            var read = 0
            func infoCalls() async throws -> Int {
                let stats = try await SentinelCluster.info(redis.port, "commandstats")
                let line = stats.split(separator: "\r\n").first { $0.hasPrefix("cmdstat_info:calls=") }
                let calls = line.flatMap { Int($0.dropFirst("cmdstat_info:calls=".count).prefix { $0.isNumber }) } ?? 0
                defer { read += 1 }
                return calls - read
            }
            func burst() async {
                for _ in 0..<20 { #expect(await probe.run().contains { $0.name == "store_eviction" && $0.isReady }) }
            }
            let before = try await infoCalls()
            await burst()
            #expect(try await infoCalls() - before == 1)
            clock.advance(.seconds(5) - .milliseconds(1))
            await burst()
            #expect(try await infoCalls() - before == 1, "still inside the window")
            clock.advance(.milliseconds(1))
            await burst()
            #expect(try await infoCalls() - before == 2, "the window ended: asked again, once")
            await client.shutdown()
        }
    }

    @Test("unknown paths get 404 in GoTrue's legacy shape, or the 2024-01-01 shape when asked")
    func notFoundShapes() async throws {
        try await application(dependencies()).test(.router) { client in
            try await client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "not_found")
                #expect(response.headers[GoTrueError.apiVersionHeader] == nil)
                let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(body?["code"] as? Int == 404)
                #expect(body?["error_code"] as? String == "not_found")
                #expect(body?["msg"] as? String == "Not Found")
                #expect(body?["error_id"] == nil)
            }
            try await client.execute(uri: "/nowhere", method: .get, headers: [GoTrueError.apiVersionHeader: "2024-01-01"]) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[GoTrueError.apiVersionHeader] == "2024-01-01")
                let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: String]
                #expect(body == ["code": "not_found", "message": "Not Found"])
            }
            try await client.execute(uri: "/nowhere", method: .get, headers: [GoTrueError.apiVersionHeader: "2023-05-01"]) { response in
                let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(body?["error_code"] as? String == "not_found")
            }
        }
    }

    @Test("5xx errors carry error_id = the request id in the legacy shape")
    func serverErrorCarriesID() async throws {
        let router = Router(context: AuthGateRequestContext.self)
        router.add(middleware: RequestLogMiddleware())
        router.get("/boom") { _, _ -> Response in throw GoTrueError(.internalServerError, code: "unexpected_failure", message: "Unexpected failure") }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/boom", method: .get, headers: [RequestLogMiddleware.requestIDHeader: "abc-123"]) { response in
                #expect(response.status == .internalServerError)
                let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(body?["error_id"] as? String == "abc-123")
                #expect(body?["error_code"] as? String == "unexpected_failure")
            }
        }
    }

    @Test("a sane client request id is echoed; a missing or hostile one is replaced")
    func requestIDs() async throws {
        try await application(dependencies()).test(.router) { client in
            try await client.execute(uri: "/health", method: .get, headers: [RequestLogMiddleware.requestIDHeader: "req-42.a_b"]) { response in
                #expect(response.headers[RequestLogMiddleware.requestIDHeader] == "req-42.a_b")
            }
            try await client.execute(uri: "/health", method: .get, headers: [RequestLogMiddleware.requestIDHeader: "bad id\"<script>"]) { response in
                let id = response.headers[RequestLogMiddleware.requestIDHeader] ?? ""
                #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
            }
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.headers[RequestLogMiddleware.requestIDHeader]?.count == 32)
            }
        }
    }
}
