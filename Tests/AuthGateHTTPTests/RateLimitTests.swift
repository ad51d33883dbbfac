import AuthGateCore
import AuthGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import RedisBridge
import Testing

@testable import AuthGateHTTP

@Suite("Rate limits and client addresses", .timeLimit(.minutes(3)))
struct RateLimitTests {
    private func app(store: any AuthStore, yaml: String) throws -> some ApplicationProtocol {
        let configuration = try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: "", environment: [:])
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: store, keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true)
        )
        return Application(router: GatewayApplication.buildRouter(dependencies))
    }

    @Test("the budget applies per client; the next request is 429 over_request_rate_limit with Retry-After")
    func budget() async throws {
        let yaml =
            "providers: { anonymous: { enabled: true } }\nrate_limits: { signup: 3/1h, nonce: off }\nserver: { trusted_proxies: [127.0.0.1, \"::1\"] }"
        try await app(store: MemoryAuthStore(), yaml: yaml).test(.live) { client in
            for _ in 0..<3 {
                try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [ClientAddress.forwardedFor: "203.0.113.7"]) {
                    #expect($0.status == .ok)
                }
            }
            try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [ClientAddress.forwardedFor: "203.0.113.7"]) { response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers[GoTrueError.errorCodeHeader] == "over_request_rate_limit")
                #expect(Int(response.headers[.retryAfter] ?? "") ?? 0 >= 1)
                let body = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body.readableBytesView))
                #expect(body["msg"] == "Request rate limit reached")
            }
            // Another client behind the same trusted proxy has its own budget.
            try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [ClientAddress.forwardedFor: "198.51.100.9, 127.0.0.1"]) {
                #expect($0.status == .ok)
            }
            // `off` means no limit.
            for _ in 0..<10 { try await client.execute(uri: "/auth/v1/nonce", method: .post) { #expect($0.status == .ok) } }
        }
    }

    /// Counted per address, an IPv6 client could spend a fresh budget from every address of its
    /// /64, and an IPv4 client one more as `::ffff:a.b.c.d`.
    @Test("an IPv6 client is counted by its /64 (rate_limits.ipv6_prefix_length), an IPv4 address in any spelling as one")
    func ipv6Networks() async throws {
        let yaml = """
            providers: { anonymous: { enabled: true } }
            rate_limits: { signup: 2/1h, nonce: 2/1h }
            server: { trusted_proxies: [127.0.0.1, "::1"] }
            """
        try await app(store: MemoryAuthStore(), yaml: yaml).test(.live) { client in
            // Each address in turn, and the status it is answered with.
            let expected: [(String, HTTPResponse.Status)] = [
                ("2001:db8:1:2::1", .ok), ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", .ok),
                ("2001:db8:1:2:ffff::9", .tooManyRequests),  // another address of the same /64
                ("2001:db8:1:3::1", .ok),  // the next /64 has its own budget
                ("203.0.113.7", .ok), ("::ffff:203.0.113.7", .ok),
                ("::ffff:cb00:7107", .tooManyRequests)  // 203.0.113.7 in a third spelling
            ]
            for (address, status) in expected {
                try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [ClientAddress.forwardedFor: address]) {
                    #expect($0.status == status, "\(address)")
                }
            }
        }
        #expect(ClientRateKey.key(for: "2001:db8:1:2:3:4:5:6", ipv6PrefixLength: 64) == "2001:db8:1:2::/64")
        #expect(ClientRateKey.key(for: "2001:db8:1:2:3:4:5:6", ipv6PrefixLength: 48) == "2001:db8:1::/48")
        #expect(ClientRateKey.key(for: "2001:db8:1:2:3:4:5:6", ipv6PrefixLength: 128) == "2001:db8:1:2:3:4:5:6/128")
        #expect(ClientRateKey.key(for: "::ffff:192.0.2.1", ipv6PrefixLength: 64) == "192.0.2.1")
        #expect(ClientRateKey.key(for: "unknown", ipv6PrefixLength: 64) == "unknown")
        let parsed = try AuthGateConfiguration.parse(yaml: "rate_limits: { ipv6_prefix_length: 56 }", baseDirectory: "", environment: [:])
        #expect(parsed.rateLimits.ipv6PrefixLength == 56)
        #expect(throws: ConfigurationError.self) {
            try AuthGateConfiguration.parse(yaml: "rate_limits: { ipv6_prefix_length: 16 }", baseDirectory: "", environment: [:])
        }
    }

    /// A client over its budget usually goes on sending: each refusal wrote a notice line.
    @Test("refusals over a budget are logged once per 10 s per bucket, with the count held back")
    func refusalLines() async throws {
        let lines = RecordedLines()
        let logger = Logger(label: "rate-limit-test") { _ in RecordedLines.Handler(lines: lines) }
        let limiter = RateLimiter(store: MemoryAuthStore())
        // A bucket of its own: the throttle is per process and per bucket.
        let bucket = "test-\(UInt32.random(in: 0...UInt32.max))"
        var refused = 0
        for _ in 0..<50 {
            do {
                try await RateLimitMiddleware.enforce(
                    limiter, bucket: bucket, key: "203.0.113.7", limit: RateLimit(count: 2, window: .seconds(3600)), logger: logger)
            } catch let error as GoTrueError where error.status == .tooManyRequests {
                refused += 1
            }
        }
        #expect(refused == 48)
        #expect(lines.count(of: "rate limited") == 1, "\(lines.messages.count) lines for 48 refusals")
    }

    @Test("X-Forwarded-For is ignored unless the peer is a trusted proxy")
    func untrustedForwardedFor() async throws {
        let yaml = "providers: { anonymous: { enabled: true } }\nrate_limits: { signup: 2/1h }"
        try await app(store: MemoryAuthStore(), yaml: yaml).test(.live) { client in
            for index in 0..<2 {
                try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [ClientAddress.forwardedFor: "10.0.0.\(index)"]) {
                    #expect($0.status == .ok)
                }
            }
            try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [ClientAddress.forwardedFor: "10.0.0.99"]) {
                #expect($0.status == .tooManyRequests, "a spoofed X-Forwarded-For must not buy a fresh budget")
            }
        }
    }

    @Test("counters are shared across replicas through Redis")
    func sharedAcrossReplicas() async throws {
        let redis = RedisClient(configuration: .init(url: try await SharedRedis.url(), poolSize: 1), logger: Logger(label: "test"))
        let prefix = "rl-test-\(UInt32.random(in: 0...UInt32.max)):"
        let yaml = "providers: { anonymous: { enabled: true } }\nrate_limits: { signup: 4/1h }"
        let first = try app(store: RedisAuthStore(redis: redis, keyPrefix: prefix), yaml: yaml)
        let second = try app(store: RedisAuthStore(redis: redis, keyPrefix: prefix), yaml: yaml)
        try await first.test(.live) { client in
            for _ in 0..<3 { try await client.execute(uri: "/auth/v1/signup", method: .post) { #expect($0.status == .ok) } }
        }
        try await second.test(.live) { client in
            try await client.execute(uri: "/auth/v1/signup", method: .post) { #expect($0.status == .ok) }
            try await client.execute(uri: "/auth/v1/signup", method: .post) { #expect($0.status == .tooManyRequests) }
        }
        await redis.shutdown()
    }

    @Test("client address resolution walks X-Forwarded-For from the right past trusted proxies")
    func resolution() throws {
        let proxies = [IPNetwork("10.0.0.0/8"), IPNetwork("127.0.0.1")].compactMap { $0 }
        let peer = try SocketAddress(ipAddress: "127.0.0.1", port: 1234)
        func resolve(_ header: String?) -> ClientAddress {
            var headers: HTTPFields = [:]
            if let header { headers[ClientAddress.forwardedFor] = header }
            return ClientAddress.resolve(headers, peer: peer, trustedProxies: proxies)
        }
        #expect(resolve(nil) == ClientAddress(address: "127.0.0.1", peerIsTrusted: true))
        #expect(resolve("203.0.113.5").address == "203.0.113.5")
        #expect(resolve("198.51.100.1, 203.0.113.5, 10.1.2.3").address == "203.0.113.5")
        #expect(resolve("not-an-ip, 10.1.2.3").address == "127.0.0.1")
        // One spelling per address, as the socket's own is written.
        #expect(resolve("[2001:DB8::0:1], 10.1.2.3").address == "2001:db8::1")
        #expect(resolve("::FFFF:203.0.113.5").address == "::ffff:203.0.113.5")
        let outsider = try SocketAddress(ipAddress: "192.0.2.44", port: 1)
        let resolved = ClientAddress.resolve([ClientAddress.forwardedFor: "1.2.3.4"], peer: outsider, trustedProxies: proxies)
        #expect(resolved == ClientAddress(address: "192.0.2.44", peerIsTrusted: false))
    }
}
