import AuthGateTestSupport
import Foundation
import NIOCore
import RedisBridge
import Testing

@testable import AuthGateCore

@Suite("Configuration: parsing, overrides, validation", .timeLimit(.minutes(3)))
struct ConfigurationTests {
    private func parse(_ yaml: String, environment: [String: String] = [:]) throws -> AuthGateConfiguration {
        try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: "/etc/authgate", environment: environment)
    }

    private func issues(_ yaml: String, environment: [String: String] = [:]) -> [ConfigurationError.Issue] {
        do {
            _ = try parse(yaml, environment: environment)
            return []
        } catch let error as ConfigurationError {
            return error.issues
        } catch {
            return [ConfigurationError.Issue(key: "unexpected", message: "\(error)")]
        }
    }

    /// Runs `body` with a temporary directory holding `k1.pem` (a signing key), as a Redis
    /// store's configuration needs; removes the directory afterwards.
    private func withSigningKeyDirectory(_ body: (URL) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestKeys.es256PEM().write(to: directory.appendingPathComponent("k1.pem"), atomically: true, encoding: .utf8)
        try body(directory)
    }

    @Test("an empty file gives the development defaults")
    func defaults() throws {
        let configuration = try parse("")
        #expect(configuration.server.host == "127.0.0.1")
        #expect(configuration.server.port == 9999)
        #expect(configuration.store.kind == .memory)
        #expect(configuration.isDevelopmentMode)
        #expect(configuration.tokens.issuer == "http://127.0.0.1:9999/auth/v1")
        #expect(configuration.tokens.accessTokenTTL == .seconds(3600))
        #expect(configuration.tokens.refresh.reuseInterval == .seconds(10))
        #expect(configuration.rateLimits.token == RateLimit(count: 150, window: .seconds(300)))
        #expect(configuration.replay.leeway == .seconds(60))
        #expect(configuration.providers.apple.issuers == ["https://appleid.apple.com", "https://account.apple.com"])
    }

    @Test("production (redis) without signing keys is refused with the key named")
    func redisNeedsKeys() {
        let found = issues("store: { kind: redis }")
        #expect(found.contains { $0.key == "tokens.signing_keys" && $0.message.contains("at least one signing key") })
    }

    @Test("values parse into their types")
    func typedValues() throws {
        let configuration = try parse(
            """
            server: { port: 8443, trusted_proxies: [10.0.0.0/8, "::1"] }
            tokens: { access_token_ttl: 1h30m }
            providers:
              apple: { enabled: true, audiences: [com.example.app], jwks_url: https://keys.example.com/apple }
              oidc: [ { name: corp, issuer: "https://id.example.com", audiences: [gateway] } ]
            rate_limits: { signup: off, nonce: 5/s }
            routes:
              - { name: api, path_prefix: /api/, upstreams: ["http://127.0.0.1:8080", "https://[::1]:8443/base/"], methods: [get], max_body: 2MiB, timeout: 1m30s }
            """
        )
        #expect(configuration.server.trustedProxies.map(\.description) == ["10.0.0.0/8", "::1/128"])
        #expect(configuration.tokens.accessTokenTTL == .seconds(5400))
        #expect(configuration.providers.apple.keySource == .url("https://keys.example.com/apple"))
        #expect(configuration.providers.google.enabled == false)
        #expect(configuration.providers.oidc.first?.keySource == .discovery)
        #expect(configuration.rateLimits.signup == nil)
        #expect(configuration.rateLimits.nonce == RateLimit(count: 5, window: .seconds(1)))
        let route = try #require(configuration.routes.first)
        #expect(route.methods == ["GET"])
        #expect(route.maxBody == 2 << 20)
        #expect(route.timeout == .seconds(90))
        #expect(route.upstreams.map(\.description) == ["http://127.0.0.1:8080", "https://[::1]:8443/base"])
        #expect(route.auth == .required)
    }

    @Test("a bad duration is named with its key and value")
    func badDuration() {
        let found = issues("tokens: { access_token_ttl: soon }")
        #expect(found.count == 1)
        #expect(found.first?.key == "tokens.access_token_ttl")
        #expect(found.first?.message.contains("\"soon\" is not a duration") == true)
    }

    @Test("an unknown store kind is named with its key and value")
    func unknownStoreKind() {
        let found = issues("store: { kind: postgres }")
        #expect(found.map(\.key) == ["store.kind"])
        #expect(found.first?.message == "\"postgres\" is not one of memory, redis")
    }

    @Test("a route without upstreams is named with its key")
    func routeWithoutUpstreams() {
        let found = issues("routes: [ { name: api, path_prefix: /api/ } ]")
        #expect(found.map(\.key) == ["routes[0].upstreams"])
        #expect(found.first?.message.contains("at least one upstream") == true)
    }

    @Test(
        "a route's host is written in the canonical form requests are matched on; any other form is named with the form to write",
        arguments: [
            ("api.example.com:443", "write it as \"api.example.com\""), ("api.example.com.", "write it as \"api.example.com\""),
            ("[0:0::1]", "write it as \"[::1]\""), ("127.1", "is not a host name"), ("api example", "is not a host name"),
            ("API.Example.com", nil), ("10.0.0.5", nil), ("[2001:db8::1]", nil)
        ])
    func routeHost(host: String, problem: String?) {
        let found = issues("routes: [ { name: api, path_prefix: /api/, host: \"\(host)\", upstreams: [http://127.0.0.1:8080] } ]")
        if let problem {
            #expect(found.map(\.key) == ["routes[0].host"])
            #expect(found.first?.message.contains(problem) == true, "\(found)")
        } else {
            #expect(found.isEmpty, "\(found)")
        }
    }

    /// `Int` reads `+80` as 80, and the host was not checked at all: `http://api example:+80`
    /// was an upstream whose `Host` header held a space.
    @Test(
        "an upstream's host and port are checked as a Host is",
        arguments: [
            ("http://api example", false), ("http://a:+80", false), ("http://a:080", false), ("http://a:", false), ("http://[::1::]:80", false),
            ("http://a:0", false), ("http://a\\b", false), ("http://127.0.0.1:8080", true), ("https://[::1]:8443/base", true),
            ("http://API.Example.com.", true)
        ])
    func upstreamAuthority(upstream: String, valid: Bool) {
        let found = issues("routes: [ { name: api, path_prefix: /api/, upstreams: [\"\(upstream)\"] } ]")
        #expect(found.map(\.key) == (valid ? [] : ["routes[0].upstreams"]), "\(found)")
    }

    @Test("every problem is reported at once, typos included")
    func manyProblems() {
        let found = issues(
            """
            server: { prot: 80, port: 70000 }
            tokens: { access_token_ttl: 5s }
            routes: [ { name: api, path_prefix: api, upstreams: [ftp://x] }, { name: api, path_prefix: /b/, upstreams: [http://b] } ]
            """
        )
        let keys = Set(found.map(\.key))
        #expect(
            keys.isSuperset(of: [
                "server.prot", "server.port", "tokens.access_token_ttl", "routes[0].path_prefix", "routes[0].upstreams", "routes[1].name"
            ]))
        #expect(found.first { $0.key == "server.port" }?.message.contains("70000") == true)
    }

    @Test("environment variables override file values, by section and key")
    func environmentOverrides() throws {
        let configuration = try parse(
            "server: { port: 9999 }\nstore: { kind: memory }",
            environment: [
                "AUTHGATE_SERVER_PORT": "7000",
                "AUTHGATE_STORE_REDIS_KEY_PREFIX": "x:",
                "AUTHGATE_PROVIDERS_APPLE_AUDIENCES": "com.a, com.b",
                "AUTHGATE_ROUTES": "[{name: r, path_prefix: /r/, upstreams: [http://127.0.0.1:1]}]",
                "AUTHGATE_TOKENS_REFRESH_REUSE_INTERVAL": "3s",
                "UNRELATED": "1"
            ]
        )
        #expect(configuration.server.port == 7000)
        #expect(configuration.providers.apple.audiences == ["com.a", "com.b"])
        #expect(configuration.routes.map(\.name) == ["r"])
        #expect(configuration.tokens.refresh.reuseInterval == .seconds(3))
        #expect(configuration.appliedEnvironmentOverrides.contains("AUTHGATE_SERVER_PORT"))
    }

    @Test("a bad environment value is named by its key")
    func badEnvironmentValue() {
        let found = issues("", environment: ["AUTHGATE_SERVER_PORT": "eighty"])
        #expect(found.map(\.key) == ["server.port"])
        #expect(found.first?.message.contains("\"eighty\"") == true)
    }

    @Test("secrets are refused in the file and masked in the printout")
    func secrets() throws {
        let inFile = issues(
            """
            store: { kind: redis, redis: { url: "redis://:hunter2@cache:6379/0", password: hunter2 } }
            """
        )
        #expect(Set(inFile.map(\.key)).isSuperset(of: ["store.redis.url", "store.redis.password"]))
        #expect(!inFile.contains { $0.message.contains("hunter2") })
        // From the environment a password is fine, and the printout masks it.
        let configuration = try parse(
            "store: { kind: memory }",
            environment: ["AUTHGATE_STORE_KIND": "memory", "AUTHGATE_STORE_REDIS_URL": "redis://u:hunter2@cache:6379/1"]
        )
        #expect(!configuration.renderedYAML().contains("hunter2"))
    }

    @Test("the printout of a redis configuration masks the password and round-trips")
    func renderedRoundTrip() throws {
        let yaml = """
            store: { kind: memory, redis: { url: "redis://cache:6379/0" } }
            providers: { oidc: [ { name: corp, issuer: "https://id.example.com", audiences: [gw] } ], google: { enabled: true, audiences: [g] } }
            routes: [ { name: api, path_prefix: /api/, upstreams: [http://127.0.0.1:8080], require_claims: { role: admin } } ]
            """
        let configuration = try parse(yaml, environment: ["AUTHGATE_STORE_REDIS_PASSWORD": "hunter2"])
        let printed = configuration.renderedYAML()
        #expect(!printed.contains("hunter2"))
        let reparsed = try parse(printed)
        #expect(reparsed.routes == configuration.routes)
        #expect(reparsed.tokens.accessTokenTTL == configuration.tokens.accessTokenTTL)
        #expect(reparsed.providers.oidc == configuration.providers.oidc)
        #expect(reparsed.providers.google == configuration.providers.google)
        #expect(reparsed.renderedYAML() == printed)
    }

    @Test(
        "the Sentinels: master name, nodes and user read (the user also from the environment), the password from the environment only and masked in the printout"
    )
    func sentinels() throws {
        try withSigningKeyDirectory { directory in
            func parse(_ yaml: String, environment: [String: String] = [:]) throws -> AuthGateConfiguration {
                try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: directory.path, environment: environment)
            }
            let yaml = """
                store: { kind: redis, redis: { url: "redis://authgate:@cache:6379/0", sentinel: { master_name: main, nodes: ["10.0.0.1:26379", "[::1]:26380"], username: watcher } } }
                tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
                """
            let configuration = try parse(yaml, environment: ["AUTHGATE_STORE_REDIS_SENTINEL_PASSWORD": "hunter2"])
            let sentinel = try #require(configuration.store.redis?.sentinel)
            #expect(sentinel.masterName == "main")
            #expect(sentinel.nodes == [.init(host: "10.0.0.1", port: 26379), .init(host: "::1", port: 26380)])
            #expect(sentinel.username == "watcher")
            #expect(sentinel.password == "hunter2")
            let printed = configuration.renderedYAML()
            #expect(printed.contains("username: watcher") && !printed.contains("hunter2"))
            #expect(try parse(yaml).store.redis?.sentinel?.password == nil)
            #expect(
                try parse(yaml.replacingOccurrences(of: ", username: watcher", with: "")).store.redis?.sentinel?.username == nil, "the default user")
            let overridden = try parse(yaml, environment: ["AUTHGATE_STORE_REDIS_SENTINEL_USERNAME": "other"])
            #expect(overridden.store.redis?.sentinel?.username == "other", "overridden from the environment")
            #expect(
                issues(yaml.replacingOccurrences(of: "username: watcher", with: "username: watcher, password: hunter2")).contains {
                    $0.key == "store.redis.sentinel.password" && !$0.message.contains("hunter2")
                })
        }
    }

    @Test("replica acknowledgement and the reconnect policy: read, range-checked, printed and read back")
    func replicaAcknowledgementAndReconnect() throws {
        try withSigningKeyDirectory { directory in
            func parseRedis(_ redis: String) throws -> AuthGateConfiguration {
                try AuthGateConfiguration.parse(
                    yaml: "store: { kind: redis, redis: \(redis) }\ntokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }",
                    baseDirectory: directory.path, environment: [:])
            }
            let configuration = try parseRedis(
                "{ url: \"redis://cache:6379/0\", min_replicas_acked: 2, replica_ack_timeout: 250ms, reconnect: { min_backoff: 10ms, max_backoff: 500ms }, record_cache_size: 0 }"
            )
            let redis = try #require(configuration.store.redis)
            #expect(redis.recordCacheSize == 0)
            #expect(try parseRedis("{}").store.redis?.recordCacheSize == 10_000, "the default")
            #expect(redis.replicaAcknowledgement?.replicas == 2)
            #expect(redis.replicaAcknowledgement?.timeout == .milliseconds(250))
            #expect(redis.minReconnectBackoff == .milliseconds(10) && redis.maxReconnectBackoff == .milliseconds(500))
            let printed = configuration.renderedYAML()
            let reparsed = try AuthGateConfiguration.parse(yaml: printed, baseDirectory: directory.path, environment: [:])
            #expect(reparsed.renderedYAML() == printed)
            #expect(try parseRedis("{}").store.redis?.replicaAcknowledgement == nil, "off by default")
            do {
                _ = try parseRedis(
                    "{ min_replicas_acked: 17, replica_ack_timeout: 0s, reconnect: { min_backoff: 2s, max_backoff: 1s, jitter: 3 }, record_cache_size: -1 }"
                )
                Issue.record("out-of-range settings must be refused")
            } catch let error as ConfigurationError {
                #expect(
                    Set(error.issues.map(\.key)).isSuperset(of: [
                        "store.redis.min_replicas_acked", "store.redis.replica_ack_timeout", "store.redis.reconnect.max_backoff",
                        "store.redis.reconnect.jitter", "store.redis.record_cache_size"
                    ]), "\(error.issues)")
            }
        }
    }

    @Test("logging.buffer: 4MiB by default, read as a size, range-checked, printed and read back")
    func loggingBuffer() throws {
        #expect(try parse("").logging.buffer == 4 << 20)
        let configuration = try parse("logging: { level: warning, format: text, buffer: 512KiB }")
        #expect(configuration.logging.buffer == 512 << 10)
        let printed = configuration.renderedYAML()
        #expect(printed.contains("buffer: 512KiB"))
        #expect(try parse(printed).logging.buffer == 512 << 10)
        #expect(try parse("", environment: ["AUTHGATE_LOGGING_BUFFER": "1MiB"]).logging.buffer == 1 << 20)
        for (value, message) in [
            ("1KiB", "\"1KiB\" is out of range; use a size from 64KiB to 1GiB"), ("2GiB", "\"2GiB\" is out of range; use a size from 64KiB to 1GiB"),
            ("lots", "\"lots\" is not a size; use bytes or a unit, like 1048576, 512KiB, 1MiB or 10MB"),
            ("99999999999999999999", "\"99999999999999999999\" is not a size; use bytes or a unit, like 1048576, 512KiB, 1MiB or 10MB")
        ] {
            let found = issues("logging: { buffer: \(value) }")
            #expect(found.map(\.key) == ["logging.buffer"], "\(value)")
            #expect(found.first?.message == message)
        }
    }

    /// Provider URLs were checked for their scheme alone: a password in one (`https://u:p@…`)
    /// was accepted and written in every log line naming the URL, and in the refusal itself.
    @Test(
        "provider URLs (an OIDC issuer, jwks_url, Apple's api_url, Google's revocation_url) and the tracing endpoint: http(s), a host, no user or password, no space or fragment; a refusal never repeats the value"
    )
    func providerURLs() {
        let refused = [
            "https://user:hunter2@keys.example/jwks", "https://hunter2@keys.example", "https://keys example/jwks", "https://keys.example/jw ks",
            "https://keys.example:+443/jwks", "https://keys.example/jwks#hunter2", "https:///jwks", "https://keys.example:0/jwks",
            "ftp://keys.example/jwks", "https://keys.example/a\\tb"
        ]
        for url in refused {
            let cases: [(yaml: String, key: String)] = [
                ("providers: { google: { enabled: true, audiences: [a], jwks_url: \"\(url)\" } }", "providers.google.jwks_url"),
                ("providers: { oidc: [ { name: corp, issuer: \"\(url)\", audiences: [a] } ] }", ".issuer"),
                ("providers: { google: { revocation_url: \"\(url)\" } }", "providers.google.revocation_url"),
                ("providers: { apple: { team_id: T, key_id: K, private_key_file: k.p8, api_url: \"\(url)\" } }", "providers.apple.api_url"),
                ("tracing: { endpoint: \"\(url)\" }", "tracing.endpoint")
            ]
            for (yaml, key) in cases {
                let found = issues(yaml).filter { $0.key.hasSuffix(key) }
                #expect(found.count == 1, "\(yaml): \(issues(yaml))")
                #expect(!found.contains { $0.message.contains("hunter2") }, "\(found)")
            }
        }
        let accepted = [
            "https://keys.example/jwks", "http://127.0.0.1:8080/jwks", "https://login.example.com/tenant/v2.0",
            "https://[::1]:8443/keys?format=jwks"
        ]
        for url in accepted {
            #expect(issues("providers: { oidc: [ { name: corp, issuer: \"\(url)\", audiences: [a], jwks_url: \"\(url)\" } ] }").isEmpty, "\(url)")
        }
    }

    @Test("YAML that does not parse is a clear error")
    func invalidYAML() {
        let found = issues("server: [unclosed")
        #expect(found.count == 1)
        #expect(found.first?.message.contains("not valid YAML") == true)
    }

    @Test(
        "a number in a configuration value has one spelling: a sign, a space or `_` inside it is refused with its key, wherever the number is (a whole number, a port, a CIDR prefix, a rate, a Redis URL)"
    )
    func numbersInOneSpelling() {
        let cases: [(yaml: String, key: String)] = [
            ("server: { port: +8443 }", "server.port"),
            ("server: { max_connections: \"+100\" }", "server.max_connections"),
            ("tokens: { refresh: { max_sessions_per_user: +5 } }", "tokens.refresh.max_sessions_per_user"),
            ("rate_limits: { ipv6_prefix_length: \"6 4\" }", "rate_limits.ipv6_prefix_length"),
            ("server: { trusted_proxies: [\"10.0.0.0/+8\"] }", "server.trusted_proxies"),
            ("rate_limits: { nonce: +5/s }", "rate_limits.nonce"),
            ("store: { kind: redis, redis: { url: \"redis://cache:+6379/0\" } }", "store.redis.url"),
            ("store: { kind: redis, redis: { url: \"redis://cache:6379/+1\" } }", "store.redis.url"),
            ("store: { kind: redis, redis: { sentinel: { master_name: m, nodes: [\"10.0.0.1:+26379\"] } } }", "store.redis.sentinel.nodes")
        ]
        for (yaml, key) in cases {
            let found = issues(yaml)
            #expect(found.contains { $0.key == key }, "\(yaml): \(found)")
        }
        #expect(issues("server: { port: 8443, max_connections: 100 }").isEmpty)
        #expect(issues("", environment: ["AUTHGATE_SERVER_PORT": "+8443"]).map(\.key) == ["server.port"])
        #expect(issues("", environment: ["AUTHGATE_SERVER_PORT": " 8443 "]).isEmpty, "whitespace around a value is not part of it")
        #expect(IPNetwork("10.0.0.0/+8") == nil && IPNetwork("10.0.0.0/ 8") == nil && IPNetwork("10.0.0.0/8") != nil)
        #expect(ConfigurationValueParsers.rate("+5/s") == nil && ConfigurationValueParsers.rate("5/s") != nil)
    }

    @Test(
        "browser_flow: each provider's client id must be an audience of an enabled provider; globs, site URL and lifetime checked; printed and read back"
    )
    func browserFlow() throws {
        let providers = "providers: { google: { enabled: true, audiences: [web] } }\n"
        let configuration = try parse(
            providers + """
                browser_flow: { enabled: true, site_url: "HTTPS://App.Example.com", redirect_urls: ["http://localhost:3000/**"], flow_lifetime: 10m,
                                google: { client_id: web } }
                """, environment: ["AUTHGATE_BROWSER_FLOW_GOOGLE_CLIENT_SECRET": "s3cret"])
        #expect(configuration.browserFlow.siteURL.text == "https://app.example.com")
        #expect(configuration.browserFlow.callbackURL == configuration.server.publicURL + "/auth/v1/callback")
        #expect(configuration.browserFlow.providers["google"]?.clientSecret == "s3cret")
        #expect(configuration.browserFlow.flowLifetime == .seconds(600))
        #expect(configuration.browserFlow.implicitLinking == false)
        #expect(configuration.browserFlow.implicitFlowCookie)
        #expect(try parse("browser_flow: { implicit_flow_cookie: false }").browserFlow.implicitFlowCookie == false)
        let printed = configuration.renderedYAML()
        #expect(!printed.contains("s3cret"))
        #expect(try parse(printed, environment: ["AUTHGATE_BROWSER_FLOW_GOOGLE_CLIENT_SECRET": "s3cret"]).renderedYAML() == printed)
        #expect(try parse("").browserFlow.enabled == false)
        #expect(try parse("browser_flow: { implicit_linking: true }").browserFlow.implicitLinking)
        #expect(try parse(providers + "browser_flow: { implicit_linking: true }").renderedYAML().contains("implicit_linking: true"))
        let found = issues(
            providers + """
                browser_flow: { enabled: true, site_url: "https://user@app.example.com", redirect_urls: ["https://{a,b"], flow_lifetime: 5s,
                                google: { client_id: other }, apple: { client_id: com.example.web } }
                """)
        for key in [
            "browser_flow.site_url", "browser_flow.redirect_urls", "browser_flow.flow_lifetime", "browser_flow.google.client_id",
            "browser_flow.google.client_secret_file", "browser_flow.apple.client_id"
        ] {
            #expect(found.contains { $0.key == key }, "\(key): \(found)")
        }
        #expect(issues("browser_flow: { enabled: true, site_url: \"https://app.example.com\" }").contains { $0.key == "browser_flow.enabled" })
        let oidc = issues(
            """
            providers: { oidc: [ { name: corp, issuer: "https://id.example.com", audiences: [web] } ] }
            browser_flow: { oidc: [ { name: corp, client_id: other, token_url: "ftp://x" }, { name: nobody } ] }
            """)
        for key in [
            "browser_flow.oidc[0].client_id", "browser_flow.oidc[0].client_secret_file", "browser_flow.oidc[0].token_url",
            "browser_flow.oidc[1].name"
        ] {
            #expect(oidc.contains { $0.key == key }, "\(key): \(oidc)")
        }
        // Without its URLs an OIDC provider's endpoints come from its issuer's discovery document.
        let secretFile = NSTemporaryDirectory() + "authgate-corp-secret-\(UUID().uuidString)"
        try "x\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let discovered = try parse(
            """
            providers: { oidc: [ { name: corp, issuer: "https://id.example.com", audiences: [web] } ] }
            browser_flow: { oidc: [ { name: corp, client_id: web, client_secret_file: "\(secretFile)", token_url: "https://id.example.com/token" } ] }
            """)
        let corp = try #require(discovered.browserFlow.providers["corp"])
        #expect(corp.authorizeURL == nil && corp.tokenURL == "https://id.example.com/token" && corp.discoveryIssuer == "https://id.example.com")
        #expect(try parse(discovered.renderedYAML()).renderedYAML() == discovered.renderedYAML())
    }
}

@Suite("Configuration value syntaxes", .timeLimit(.minutes(3)))
struct ConfigurationValueParserTests {
    @Test(
        "durations",
        arguments: [
            ("3600s", Duration.seconds(3600)), ("10m", .seconds(600)), ("1h30m", .seconds(5400)), ("250ms", .milliseconds(250)),
            ("2d", .seconds(172_800)), ("0", .zero)
        ])
    func durations(text: String, expected: Duration) {
        #expect(ConfigurationValueParsers.duration(text) == expected)
    }

    @Test("invalid durations", arguments: ["", "10", "abc", "5x", "m", "1.5h", "-3s", "10 m"])
    func invalidDurations(text: String) {
        #expect(ConfigurationValueParsers.duration(text) == nil)
    }

    @Test("durations format back to what they parse from")
    func durationFormat() {
        for text in ["1h", "90s", "250ms", "2d", "15m"] {
            #expect(ConfigurationValueParsers.format(ConfigurationValueParsers.duration(text) ?? .zero) == text)
        }
    }

    @Test("byte sizes")
    func byteSizes() {
        #expect(ConfigurationValueParsers.byteSize("1048576") == 1_048_576)
        #expect(ConfigurationValueParsers.byteSize("512KiB") == 524_288)
        #expect(ConfigurationValueParsers.byteSize("10MB") == 10_000_000)
        #expect(ConfigurationValueParsers.byteSize("1MiB") == 1 << 20)
        #expect(ConfigurationValueParsers.byteSize("1 TB") == nil)
        #expect(ConfigurationValueParsers.byteSize("99999999999GiB") == nil)
    }

    @Test("CIDR networks match addresses, IPv4-mapped IPv6 included")
    func networks() throws {
        let v4 = try #require(IPNetwork("10.1.0.0/16"))
        #expect(v4.contains("10.1.200.3"))
        #expect(!v4.contains("10.2.0.1"))
        #expect(v4.contains("::ffff:10.1.0.9"))
        let v6 = try #require(IPNetwork("fd00::/8"))
        #expect(v6.contains("fd12::1"))
        #expect(!v6.contains("fe80::1"))
        #expect(IPNetwork("10.0.0.0/33") == nil)
        #expect(IPNetwork("example.com") == nil)
    }
}

@Suite("Files named by the configuration", .timeLimit(.minutes(3)))
struct ConfigurationFileTests {
    @Test("relative paths resolve against the configuration file's directory; missing files are named")
    func relativePaths() {
        do {
            _ = try AuthGateConfiguration.parse(
                yaml: """
                    tokens: { signing_keys: [ { kid: k1, file: keys/k1.pem } ] }
                    providers: { apple: { enabled: true, audiences: [a], jwks_file: apple.json } }
                    """,
                baseDirectory: "/nonexistent/dir",
                environment: [:]
            )
            Issue.record("missing files must be reported")
        } catch {
            #expect(error.issues.contains { $0.key == "tokens.signing_keys[0].file" && $0.message.contains("/nonexistent/dir/keys/k1.pem") })
            #expect(error.issues.contains { $0.key == "providers.apple.jwks_file" && $0.message.contains("/nonexistent/dir/apple.json") })
        }
    }

    @Test("exactly one signing key must be active")
    func oneActiveKey() {
        do {
            _ = try AuthGateConfiguration.parse(
                yaml: "tokens: { signing_keys: [ { kid: a, file: /dev/null, state: retired }, { kid: a, file: /dev/null, state: published } ] }",
                baseDirectory: "",
                environment: [:]
            )
            Issue.record("two non-active keys with one kid must be refused")
        } catch {
            #expect(error.issues.contains { $0.key == "tokens.signing_keys" && $0.message == "exactly one key must be active, found 0" })
            #expect(error.issues.contains { $0.key == "tokens.signing_keys[1].kid" })
        }
    }
}
