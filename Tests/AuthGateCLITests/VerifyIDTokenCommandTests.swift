import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

/// `authgate verify-id-token` through the real executable, on a real Apple token (fixture).
@Suite("authgate verify-id-token", .timeLimit(.minutes(3)))
struct VerifyIDTokenCommandTests {
    private static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("AuthGateCoreTests/Fixtures/provider-tokens")

    private struct Fixture {
        let token: String
        let audience: String
        let subject: String
        let issuedAt: Int64
        let expiry: Int64
    }

    private func appleFixture() throws -> Fixture {
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("apple-UaIIFY2fW4-2025-07-lunaone.json"))
        let object = try JSONDecoder().decode([String: JSONValue].self, from: data)
        let claims = try #require(object["claims"]?.objectValue)
        return Fixture(
            token: try #require(object["token"]?.stringValue),
            audience: try #require(claims["aud"]?.stringValue),
            subject: try #require(claims["sub"]?.stringValue),
            issuedAt: try #require(claims["iat"]?.integerValue),
            expiry: try #require(claims["exp"]?.integerValue)
        )
    }

    private var appleJWKS: String { Self.fixtures.appendingPathComponent("jwks/apple-jwks-2025-07-13.lunaone.json").path }

    @Test("a valid token prints its claims and exits 0; --json gives a machine-readable answer")
    func valid() async throws {
        let fixture = try appleFixture()
        let arguments = [
            "verify-id-token", "--provider", "apple", "--jwks-file", appleJWKS, "--audience", fixture.audience, "--at", String(fixture.issuedAt + 60)
        ]
        let text = try await AuthGateBinary.run(arguments + [fixture.token])
        #expect(text.status == 0, "\(text.standardError)")
        #expect(text.standardOutput.contains("valid: apple ID token for subject \(fixture.subject)"))
        let json = try await AuthGateBinary.run(arguments + ["--json", fixture.token])
        #expect(json.status == 0)
        let object = try JSONDecoder().decode([String: JSONValue].self, from: Data(json.standardOutput.utf8))
        #expect(object["valid"] == true)
        #expect(object["subject"]?.stringValue == fixture.subject)
        #expect(object["identity_data"]?.objectValue?["provider_id"]?.stringValue == fixture.subject)
    }

    @Test("a rejected token exits 1 with the precise reason")
    func rejected() async throws {
        let fixture = try appleFixture()
        let base = ["verify-id-token", "--provider", "apple", "--jwks-file", appleJWKS, "--json"]
        let expired = try await AuthGateBinary.run(base + ["--audience", fixture.audience, "--at", String(fixture.expiry + 1), fixture.token])
        #expect(expired.status == 1)
        #expect(try JSONDecoder().decode([String: JSONValue].self, from: Data(expired.standardOutput.utf8))["reason"] == "expired")
        let audience = try await AuthGateBinary.run(base + ["--audience", "com.example.other", "--at", String(fixture.issuedAt + 1), fixture.token])
        #expect(audience.status == 1)
        #expect(try JSONDecoder().decode([String: JSONValue].self, from: Data(audience.standardOutput.utf8))["reason"] == "audience")
        let nonce = try await AuthGateBinary.run(
            base + ["--audience", fixture.audience, "--at", String(fixture.issuedAt + 1), "--nonce", "abc", fixture.token])
        #expect(nonce.status == 1)
        let nonceAnswer = try JSONDecoder().decode([String: JSONValue].self, from: Data(nonce.standardOutput.utf8))
        #expect(nonceAnswer["reason"] == "nonce_missing")
        #expect(nonceAnswer["message"] == "Passed nonce and nonce in id_token should either both exist or not.")
    }

    /// Apple's token of 2019 (nov/apple_id's fixture, signed by Apple's key `AIDOPK1`) carries an
    /// `at_hash`, whose access token is not public: any access token given is another one.
    @Test("--access-token is checked against the token's at_hash: another access token is access_token_mismatch")
    func accessToken() async throws {
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("apple-AIDOPK1-2019-06-nov-apple_id.json"))
        let object = try JSONDecoder().decode([String: JSONValue].self, from: data)
        let claims = try #require(object["claims"]?.objectValue)
        let jwk = try #require(object["jwk"])
        let jwks = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-at-hash-\(UUID().uuidString).json")
        try Data(JSONValue.object(["keys": .array([jwk])]).serialized()).write(to: jwks)
        defer { try? FileManager.default.removeItem(at: jwks) }
        let arguments = [
            "verify-id-token", "--provider", "apple", "--jwks-file", jwks.path, "--audience", try #require(claims["aud"]?.stringValue), "--json",
            "--at", String(try #require(claims["iat"]?.integerValue) + 60)
        ]
        let token = try #require(object["token"]?.stringValue)
        let valid = try await AuthGateBinary.run(arguments + [token])
        #expect(valid.status == 0, "\(valid.standardOutput)\(valid.standardError)")
        let stray = try await AuthGateBinary.run(arguments + ["--access-token", "a0f1.access-token-of-another-sign-in", token])
        #expect(stray.status == 1)
        #expect(try JSONDecoder().decode([String: JSONValue].self, from: Data(stray.standardOutput.utf8))["reason"] == "access_token_mismatch")
    }

    @Test("usage errors exit 2: unknown provider, no audience")
    func usage() async throws {
        let fixture = try appleFixture()
        let unknown = try await AuthGateBinary.run(["verify-id-token", "--provider", "myspace", fixture.token])
        #expect(unknown.status == 2)
        #expect(unknown.standardError.contains("unknown provider \"myspace\""))
        let noAudience = try await AuthGateBinary.run(["verify-id-token", "--provider", "apple", "--jwks-file", appleJWKS, fixture.token])
        #expect(noAudience.status == 2)
        #expect(noAudience.standardError.contains("no accepted audience"))
    }
}
