import AuthGateCore
import AuthGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AuthGateHTTP

/// CORS for browser apps on `/auth/v1` (`server.cors_allowed_origins`).
@Suite("CORS", .timeLimit(.minutes(3)))
struct CORSTests {
    private func app(_ origins: String) throws -> some ApplicationProtocol {
        let configuration = try AuthGateConfiguration.parse(
            yaml:
                "server: { cors_allowed_origins: \(origins) }\nproviders: { anonymous: { enabled: true } }\nrate_limits: { signup: off, token: off }",
            baseDirectory: "", environment: [:])
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: MemoryAuthStore(), keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true))
        return Application(router: GatewayApplication.buildRouter(dependencies))
    }

    private static let origin = HTTPField.Name.origin

    @Test("a preflight and a cross-origin POST from an allowed origin get the CORS headers; another origin gets none")
    func allowedAndRefused() async throws {
        try await app("[\"https://app.example.com\", \"http://localhost:3000\"]").test(.router) { client in
            let preflight: HTTPFields = [
                Self.origin: "https://app.example.com", .accessControlRequestMethod: "POST",
                .accessControlRequestHeaders: "apikey, authorization, x-client-info, x-supabase-api-version, content-type"
            ]
            try await client.execute(uri: "/auth/v1/token?grant_type=id_token", method: .options, headers: preflight) { response in
                #expect(response.status == .noContent)
                #expect(response.headers[.accessControlAllowOrigin] == "https://app.example.com")
                let allowed = Set(
                    (response.headers[.accessControlAllowHeaders] ?? "").lowercased().split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces)
                    })
                #expect(allowed.isSuperset(of: ["apikey", "authorization", "x-client-info", "x-supabase-api-version", "content-type"]), "\(allowed)")
                #expect(response.headers[.accessControlAllowMethods]?.contains("POST") == true)
                #expect(response.headers[.vary] == "Origin")
            }
            try await client.execute(
                uri: "/auth/v1/signup", method: .post, headers: [Self.origin: "http://localhost:3000", .contentType: "application/json"],
                body: ByteBuffer(string: "{}")
            ) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.accessControlAllowOrigin] == "http://localhost:3000")
            }
            // Errors carry the headers too (the browser must be able to read GoTrue's error body).
            try await client.execute(uri: "/auth/v1/user", method: .get, headers: [Self.origin: "https://app.example.com"]) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.accessControlAllowOrigin] == "https://app.example.com")
            }
            for refused in ["https://evil.example.com", "https://app.example.com.evil.com", "null"] {
                try await client.execute(
                    uri: "/auth/v1/signup", method: .options, headers: [Self.origin: refused, .accessControlRequestMethod: "POST"]
                ) {
                    #expect($0.headers[.accessControlAllowOrigin] == nil, "\(refused)")
                    #expect($0.status != .noContent)
                }
                try await client.execute(uri: "/auth/v1/settings", method: .get, headers: [Self.origin: refused]) {
                    #expect($0.status == .ok)
                    #expect($0.headers[.accessControlAllowOrigin] == nil, "\(refused)")
                }
            }
            try await client.execute(uri: "/auth/v1/settings", method: .get) { #expect($0.headers[.accessControlAllowOrigin] == nil) }
        }
    }

    @Test("* allows any origin; without the setting a browser gets nothing (as before)")
    func anyOrNone() async throws {
        try await app("[\"*\"]").test(.router) { client in
            try await client.execute(uri: "/auth/v1/settings", method: .get, headers: [Self.origin: "https://anything.example"]) {
                #expect($0.headers[.accessControlAllowOrigin] == "*")
            }
        }
        try await app("[]").test(.router) { client in
            try await client.execute(uri: "/auth/v1/signup", method: .options, headers: [Self.origin: "https://app.example.com"]) {
                // Not a preflight answer: the path's 405 with its methods, and no CORS header.
                #expect($0.status == .methodNotAllowed && $0.headers[.allow] == "POST")
                #expect($0.headers[.accessControlAllowOrigin] == nil)
            }
        }
    }

    /// Browsers leave the scheme's default port out of `Origin` (RFC 6454 §6.2): an origin
    /// configured with it used never to match. Both sides are compared in one form.
    @Test("an origin configured with its scheme's default port matches what browsers send; a request's Origin is read in the same form")
    func defaultPort() async throws {
        try await expectSignups(
            allowing: "[\"https://app.example.com:443\", \"http://localhost:80\"]",
            [
                ("https://app.example.com", true), ("https://APP.example.com:443", true), ("http://localhost", true),
                ("https://app.example.com:8443", false), ("http://app.example.com", false), ("https://app.example.com:0443", false)
            ])
    }

    /// Browsers write an IPv6 origin in RFC 5952 form (the WHATWG URL parser's); one configured
    /// in another spelling, or with its host's trailing dot, used never to match.
    @Test("an IPv6 origin configured in any spelling matches the one browsers send; a trailing dot is the same host")
    func ipv6AndTrailingDot() async throws {
        try await expectSignups(
            allowing: "[\"http://[0:0::01]:8080\", \"https://app.example.com.\"]",
            [
                ("http://[::1]:8080", true), ("http://[0::1]:8080", true), ("https://app.example.com", true),
                ("https://app.example.com.", true), ("http://[::1]", false), ("http://[::2]:8080", false)
            ])
    }

    /// Signs up from each origin to a gateway whose `cors_allowed_origins` is `configured`: each
    /// is answered 200, with `Access-Control-Allow-Origin` (the origin as sent) when it is allowed.
    private func expectSignups(allowing configured: String, _ origins: [(origin: String, allowed: Bool)]) async throws {
        try await app(configured).test(.router) { client in
            for (origin, allowed) in origins {
                try await client.execute(uri: "/auth/v1/signup", method: .post, headers: [Self.origin: origin]) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.accessControlAllowOrigin] == (allowed ? origin : nil), "\(origin)")
                }
            }
        }
    }

    @Test("cors_allowed_origins refuses what is not an origin")
    func configuration() throws {
        for bad in [
            "app.example.com", "https://app.example.com/", "https://app.example.com/path", "ftp://x", "[\"*\", \"https://a.example\"]",
            "https://app.example.com:99999", "https://app.example.com:0", "https://a..example", "https://[::1::]"
        ] {
            let value = bad.hasPrefix("[") ? bad : "[\"\(bad)\"]"
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try AuthGateConfiguration.parse(yaml: "server: { cors_allowed_origins: \(value) }", baseDirectory: "", environment: [:])
            }
        }
        let parsed = try AuthGateConfiguration.parse(
            yaml: "server: { cors_allowed_origins: [\"HTTPS://App.Example.com:8443\"] }", baseDirectory: "", environment: [:])
        #expect(parsed.server.corsAllowedOrigins == ["https://app.example.com:8443"])
        let defaults = try AuthGateConfiguration.parse(
            yaml:
                "server: { cors_allowed_origins: [\"https://a.example:443\", \"http://b.example:80\", \"http://[::1]:80\", \"https://c.example:80\"] }",
            baseDirectory: "", environment: [:])
        #expect(defaults.server.corsAllowedOrigins == ["https://a.example", "http://b.example", "http://[::1]", "https://c.example:80"])
        let spellings = try AuthGateConfiguration.parse(
            yaml: "server: { cors_allowed_origins: [\"http://[0:0::01]:8080\", \"https://[::FFFF:1.2.3.4]:443\", \"https://d.example.:8443\"] }",
            baseDirectory: "", environment: [:])
        #expect(spellings.server.corsAllowedOrigins == ["http://[::1]:8080", "https://[::ffff:1.2.3.4]", "https://d.example:8443"])
    }
}
