import AuthGateCore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AuthGateHTTP

@Suite("JWKS endpoints", .timeLimit(.minutes(3)))
struct JWKSTests {
    @Test("both JWKS paths publish every key's public half with GoTrue's caching header")
    func jwks() async throws {
        let configuration = try AuthGateConfiguration.parse(yaml: "", baseDirectory: "", environment: [:])
        let keyRing = try SigningKeyRing(validating: [
            SigningKey.generate(kid: "active-1", algorithm: .es256),
            SigningKey.generate(kid: "next-1", algorithm: .es256, state: .published)
        ])
        let app = Application(router: GatewayApplication.buildRouter(.init(configuration: configuration, store: MemoryAuthStore(), keyRing: keyRing)))
        try await app.test(.router) { client in
            for path in ["/auth/v1/.well-known/jwks.json", "/.well-known/jwks.json"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.cacheControl] == "public, max-age=600")
                    let body = try JSONDecoder().decode([String: [[String: JSONValue]]].self, from: Data(response.body.readableBytesView))
                    let keys = try #require(body["keys"])
                    #expect(Set(keys.compactMap { $0["kid"]?.stringValue }) == ["active-1", "next-1"])
                    #expect(keys.allSatisfy { $0["kty"] == "EC" && $0["crv"] == "P-256" && $0["alg"] == "ES256" && $0["d"] == nil })
                }
            }
            try await client.execute(uri: "/auth/v1/.well-known/openid-configuration", method: .get) { response in
                let body = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body.readableBytesView))
                #expect(body["jwks_uri"] == .string(configuration.tokens.issuer + "/.well-known/jwks.json"))
            }
        }
    }
}
