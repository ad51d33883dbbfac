import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import AuthGateHTTP

@Suite("Server nonces over HTTP and provider key sets in /readyz", .timeLimit(.minutes(3)))
struct NonceAndReadinessTests {
    @Test("POST /auth/v1/nonce issues a single-use nonce with its expiry")
    func issueNonce() async throws {
        let configuration = try AuthGateConfiguration.parse(yaml: "replay: { server_nonce_ttl: 5m }", baseDirectory: "", environment: [:])
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration,
            store: MemoryAuthStore(),
            keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true)
        )
        let before = Date().timeIntervalSince1970
        let issued = try await Application(router: GatewayApplication.buildRouter(dependencies)).test(.router) { client in
            var nonces: [String] = []
            for _ in 0..<2 {
                let nonce = try await client.execute(uri: "/auth/v1/nonce", method: .post) { response -> String in
                    #expect(response.status == .ok)
                    #expect(response.headers[.cacheControl] == "no-store")
                    let body = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body.readableBytesView))
                    let nonce = try #require(body["nonce"]?.stringValue)
                    #expect(nonce.count == 43)
                    let expiresAt = try #require(body["expires_at"]?.integerValue)
                    let after = Date().timeIntervalSince1970
                    #expect(Double(expiresAt) >= (before + 300).rounded(.down) - 1 && Double(expiresAt) <= after + 300)
                    return nonce
                }
                nonces.append(nonce)
            }
            return nonces
        }
        #expect(Set(issued).count == 2)
        #expect(try await dependencies.nonces.consume(issued[0]))
        #expect(try await dependencies.nonces.consume(issued[0]) == false)
    }

    @Test("/readyz reports each provider's key set; a provider that is down degrades, it does not unready")
    func providerKeySetsInReadiness() async throws {
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let configuration = try AuthGateConfiguration.parse(
            yaml: "providers: { oidc: [ { name: fake, issuer: \"\(provider.issuer)\", audiences: [app], jwks_url: \"\(provider.jwksURL)\" } ] }",
            baseDirectory: "",
            environment: [:]
        )
        let assembly = try GatewayApplication.assemble(configuration, logger: Logger(label: "test"))
        let keySet = try #require(assembly.dependencies.verifiers.keySets.first)
        let app = Application(router: GatewayApplication.buildRouter(assembly.dependencies))
        try await app.test(.router) { client in
            provider.setDown(true)
            try? await keySet.refresh()
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                let body = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body.readableBytesView))
                #expect(body["status"] == "degraded")
                #expect(body["checks"]?.objectValue?["provider_keys.fake"]?.stringValue?.hasPrefix("no keys") == true)
            }
            provider.setDown(false)
            try await keySet.refresh()
            try await client.execute(uri: "/readyz", method: .get) { response in
                let body = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body.readableBytesView))
                #expect(body["status"] == "ready")
                #expect(body["checks"]?.objectValue?["provider_keys.fake"]?.stringValue?.hasPrefix("ok (1 keys") == true)
            }
        }
        for service in assembly.services {
            if let http = service as? HTTPClientService { try await http.client.shutdown() }
        }
        await provider.stop()
    }

    @Test("/readyz reports Apple's server credentials: identifiers and the client secret's remaining life, never the secret")
    func appleCredentialsInReadiness() async throws {
        let directory = NSTemporaryDirectory() + "authgate-readyz-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: directory + "/apple.p8", atomically: true, encoding: .utf8)
        try #"{"keys":[]}"#.write(toFile: directory + "/apple-jwks.json", atomically: true, encoding: .utf8)
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers: { apple: { enabled: true, audiences: [com.example.app], jwks_file: apple-jwks.json,
                  team_id: TEAM123456, key_id: KEY1234567, private_key_file: apple.p8 } }
                """,
            baseDirectory: directory,
            environment: ["AUTHGATE_PROVIDERS_TOKEN_ENCRYPTION_KEY": Data(repeating: 7, count: 32).base64EncodedString()]
        )
        let assembly = try GatewayApplication.assemble(configuration, logger: Logger(label: "test"))
        let app = Application(router: GatewayApplication.buildRouter(assembly.dependencies))
        try await app.test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                let text = String(buffer: response.body)
                let body = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body.readableBytesView))
                let detail = try #require(body["checks"]?.objectValue?["apple_server_credentials"]?.stringValue)
                #expect(detail.hasPrefix("ok (team TEAM123456, key KEY1234567, 1 client id; client secret valid "))
                #expect(!text.contains("eyJ"), "no JWT in the answer")
            }
        }
        for service in assembly.services {
            if let http = service as? HTTPClientService { try await http.client.shutdown() }
        }
    }
}
