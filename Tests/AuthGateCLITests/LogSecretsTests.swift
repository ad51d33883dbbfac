import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// No secret reaches the logs, at the most verbose level: tokens, refresh tokens, ID tokens,
/// `Authorization` values, signing keys.
@Suite("Log secrets", .serialized, .timeLimit(.minutes(3)))
struct LogSecretsTests {
    @Test("at trace level, a gateway's log holds no token, refresh token, ID token, Authorization value or key material")
    func noSecretsInLogs() async throws {
        let files = try GatewayFiles("log-secrets")
        defer { files.remove() }
        let pem = try files.keyPEM()
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let upstream = try await EchoUpstream.start()
        let config = files.config
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, public_url: "https://auth.example.com" }
            store: { kind: redis, redis: { url: "\(try await SharedRedis.url())", key_prefix: "logs-\(UInt32.random(in: 0...UInt32.max)):" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers:
              anonymous: { enabled: true }
              oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
            rate_limits: { token: off, signup: off, nonce: off }
            routes: [ { name: api, path_prefix: /api/, upstreams: [\(upstream.url)], auth: required, allow_anonymous: true, forward_authorization: true } ]
            logging: { level: trace }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", config.path])
        var secrets: [String] = []
        func call(_ method: String, _ path: String, token: String? = nil, json: String? = nil) async throws -> [String: JSONValue] {
            let (data, _) = try await HTTP.send(
                URL(string: "http://127.0.0.1:\(server.port)\(path)")!, method: method,
                headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], json: json
            )
            return (try? JSONValue.parse(Array(data)).objectValue) ?? [:]
        }
        do {
            let now = Int64(Date().timeIntervalSince1970)
            let idToken = FakeProvider.token(
                claims: [
                    "iss": .string(provider.issuer), "aud": "app", "sub": "secret-subject", "iat": .integer(now), "exp": .integer(now + 600),
                    "jti": "j1"
                ],
                key: FakeProvider.sharedKeys[0]
            )
            secrets.append(idToken)
            let signedIn = try await call("POST", "/auth/v1/token?grant_type=id_token", json: "{\"provider\":\"fake\",\"id_token\":\"\(idToken)\"}")
            let anonymous = try await call("POST", "/auth/v1/signup", json: "{}")
            for session in [signedIn, anonymous] {
                let access = try #require(session["access_token"]?.stringValue)
                let refresh = try #require(session["refresh_token"]?.stringValue)
                secrets += [access, refresh]
                _ = try await call("GET", "/api/x", token: access)
                _ = try await call("GET", "/auth/v1/user", token: access)
                let rotated = try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}")
                _ = try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"\(refresh)\"}")
                if let next = rotated["refresh_token"]?.stringValue { secrets.append(next) }
                if let next = rotated["access_token"]?.stringValue { secrets.append(next) }
            }
            let forged = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
            secrets.append(forged)
            _ = try await call("GET", "/api/x", token: forged)
            _ = try await call("POST", "/auth/v1/token?grant_type=refresh_token", json: "{\"refresh_token\":\"not-a-real-refresh-token-0123456789\"}")
            secrets.append("not-a-real-refresh-token-0123456789")
            let minted = try await AuthGateBinary.run(["tokens", "service-role", "--config", config.path]).standardOutput.trimmingCharacters(
                in: .whitespacesAndNewlines)
            secrets.append(minted)
            _ = try await call("GET", "/auth/v1/admin/users", token: minted)
        } catch {
            _ = await server.stop()
            await upstream.stop()
            await provider.stop()
            throw error
        }
        #expect(await server.stop() == 0)
        await upstream.stop()
        await provider.stop()

        let log = server.log
        #expect(log.contains("\"msg\":\"request\""), "the log must hold the request lines the check reads")
        let requestLines = log.split(separator: "\n").filter { $0.contains("\"msg\":\"request\"") }
        #expect(
            requestLines.contains { $0.contains("\"gw.user_id\"") && $0.contains("\"gw.route\":\"api\"") },
            "a proxied request's line names its user and route")
        #expect(requestLines.contains { $0.contains("\"gw.outcome\":\"bad_signature\"") }, "a refused request's line says why")
        for secret in secrets where !secret.isEmpty {
            // Any 24-character piece of a secret is enough to count as a leak.
            let pieces = stride(from: 0, to: max(1, secret.count - 24), by: 24).map { String(secret.dropFirst($0).prefix(24)) }
            for piece in pieces where piece.count == 24 {
                #expect(!log.contains(piece), "the log holds part of a secret: \(piece)")
            }
        }
        #expect(!log.localizedCaseInsensitiveContains("bearer "), "an Authorization value is in the log")
        for line in pem.split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!log.contains(line), "key material is in the log")
        }
    }
}
