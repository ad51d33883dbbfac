import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

/// A route's `cors` on the real binary: preflights answered by the gateway without a token and
/// without reaching the upstream, every answer to an allowed origin (the gateway's 401 included)
/// carrying the headers, the upstream's own CORS headers replaced, other origins getting none.
@Suite("CORS on proxied routes", .serialized, .timeLimit(.minutes(3)))
struct RouteCORSTests {
    /// `curl` with `arguments`: the status and the response headers, names lower-cased.
    private func headers(_ arguments: [String]) async throws -> (status: Int, fields: [String: String]) {
        let output = try await TestCertificates.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-D", "-"] + arguments, check: false).output
        var lines = output.split(separator: "\r\n")
        let status = lines.isEmpty ? 0 : Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[name] = fields[name].map { "\($0), \(value)" } ?? value
        }
        return (status, fields)
    }

    @Test("preflights, the gateway's own 401, the upstream's answer; allowed and other origins; a route without cors untouched")
    func routeCORS() async throws {
        // An upstream with a CORS policy of its own (any origin), which the route's replaces.
        let upstream = try await NginxServer.start(
            locations: #"location / { add_header Access-Control-Allow-Origin "*" always; add_header X-Total "7" always; return 200 "upstream\n"; }"#)
        defer { upstream.stop() }
        let files = try GatewayFiles("route-cors")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1 }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers: { anonymous: { enabled: true } }
            rate_limits: { token: off, signup: off, nonce: off }
            routes:
              - name: api
                path_prefix: /api/
                upstreams: ["\(upstream.url)"]
                auth: required
                allow_anonymous: true
                cors: { allowed_origins: ["https://app.example.com"], expose_headers: [x-total], allow_credentials: true, max_age: 2m }
              - { name: plain, path_prefix: /plain/, upstreams: ["\(upstream.url)"], auth: public }
              - name: limited
                path_prefix: /limited/
                methods: [GET, PUT]
                upstreams: ["\(upstream.url)"]
                auth: public
                cors: { allowed_origins: ["*"] }
            logging: { level: warning }
            """)
        let checked = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
        #expect(checked.status == 0, "\(checked.standardError)")
        try files.writeConfig(checked.standardOutput)  // the printout is itself a configuration that loads
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        defer { Task { _ = await server.stop() } }
        let base = "http://127.0.0.1:\(server.port)"
        let (data, _) = try await HTTP.send(HTTP.loopbackURL(port: server.port, path: "/auth/v1/signup"), method: "POST", json: "{}")
        let token = try #require(try JSONValue.parse(Array(data)).objectValue?["access_token"]?.stringValue)
        let allowed = "https://app.example.com"

        let preflight = try await headers([
            "-X", "OPTIONS", "-H", "Origin: \(allowed)", "-H", "Access-Control-Request-Method: PUT", "-H",
            "Access-Control-Request-Headers: authorization, content-type", base + "/api/items/1"
        ])
        #expect(preflight.status == 204)
        #expect(preflight.fields["access-control-allow-origin"] == allowed)
        #expect(preflight.fields["access-control-allow-credentials"] == "true")
        #expect(preflight.fields["access-control-allow-methods"]?.contains("PUT") == true)
        #expect(preflight.fields["access-control-allow-headers"]?.contains("authorization") == true)
        #expect(preflight.fields["access-control-max-age"] == "120")
        #expect(preflight.fields["vary"] == "Origin")
        #expect(preflight.fields["content-length"] == nil)

        let otherPreflight = try await headers([
            "-X", "OPTIONS", "-H", "Origin: https://evil.example.com", "-H", "Access-Control-Request-Method: PUT", base + "/api/items/1"
        ])
        #expect(otherPreflight.status == 204 && otherPreflight.fields["access-control-allow-origin"] == nil, "\(otherPreflight)")

        // The gateway's own refusal can be read by the allowed origin's script.
        let unauthorized = try await headers(["-H", "Origin: \(allowed)", base + "/api/items"])
        #expect(unauthorized.status == 401 && unauthorized.fields["access-control-allow-origin"] == allowed, "\(unauthorized)")

        let answered = try await headers(["-H", "Origin: \(allowed)", "-H", "Authorization: Bearer \(token)", base + "/api/items"])
        #expect(answered.status == 200)
        #expect(answered.fields["access-control-allow-origin"] == allowed, "the upstream's * must be replaced: \(answered.fields)")
        #expect(answered.fields["access-control-expose-headers"] == "x-total")
        #expect(answered.fields["x-total"] == "7")

        let other = try await headers(["-H", "Origin: https://evil.example.com", "-H", "Authorization: Bearer \(token)", base + "/api/items"])
        #expect(other.status == 200 && other.fields["access-control-allow-origin"] == nil, "\(other.fields)")

        // A route limited to GET and PUT answers the preflight of a PUT (OPTIONS is not among its
        // methods), with only those methods; `*` needs no Vary.
        let limited = try await headers([
            "-X", "OPTIONS", "-H", "Origin: https://any.example", "-H", "Access-Control-Request-Method: PUT", base + "/limited/x"
        ])
        #expect(limited.status == 204 && limited.fields["access-control-allow-origin"] == "*", "\(limited)")
        #expect(limited.fields["access-control-allow-methods"] == "GET, PUT" && limited.fields["vary"] == nil, "\(limited.fields)")
        let notListed = try await headers([
            "-X", "OPTIONS", "-H", "Origin: https://any.example", "-H", "Access-Control-Request-Method: DELETE", base + "/limited/x"
        ])
        #expect(notListed.status == 404, "a preflight for a method the route does not serve matched it: \(notListed)")

        // A route without cors: the upstream's headers pass as they are, preflights go upstream.
        let untouched = try await headers(["-H", "Origin: \(allowed)", base + "/plain/x"])
        #expect(untouched.status == 200 && untouched.fields["access-control-allow-origin"] == "*", "\(untouched.fields)")
    }

    @Test("check-config refuses * with credentials, an origin with a path, and a header name with a space")
    func settingsChecked() async throws {
        let files = try GatewayFiles("route-cors-config")
        defer { files.remove() }
        for (cors, expected) in [
            ("{ allowed_origins: [\"*\"], allow_credentials: true }", "routes[0].cors.allow_credentials"),
            ("{ allowed_origins: [\"https://app.example.com/path\"] }", "routes[0].cors.allowed_origins"),
            ("{ allowed_origins: [\"https://app.example.com\"], allowed_headers: [\"x bad\"] }", "routes[0].cors.allowed_headers"),
            ("{ }", "routes[0].cors.allowed_origins")
        ] {
            try files.writeConfig(
                """
                tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
                routes: [ { name: a, path_prefix: /a/, upstreams: ["http://127.0.0.1:9"], cors: \(cors) } ]
                """)
            let result = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
            #expect(result.status != 0, "\(cors) was accepted")
            #expect(result.standardError.contains(expected), "\(cors): \(result.standardError)")
        }
    }
}
