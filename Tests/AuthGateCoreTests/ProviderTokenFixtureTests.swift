import AuthGateTestSupport
import Foundation
import Logging
import Testing

@testable import AuthGateCore

/// The real, expired Apple / Google / Firebase ID tokens in Fixtures/provider-tokens, verified
/// with a pinned clock against the key sets in jwks/.
@Suite("Real provider tokens (fixtures)", .timeLimit(.minutes(3)))
struct ProviderTokenFixtureTests {
    struct Case: Sendable, CustomStringConvertible {
        let file: String
        let provider: String
        let token: String
        let claims: [String: JSONValue]
        let jwk: JSONValue?
        let signatureVerified: Bool
        var description: String { file }

        var audience: String {
            if case .array(let values) = claims["aud"] { return values.first?.stringValue ?? "" }
            return claims["aud"]?.stringValue ?? ""
        }
        var issuedAt: Int64 { claims["iat"]?.integerValue ?? 0 }
        var expiry: Int64 { claims["exp"]?.integerValue ?? 0 }
        var isNotification: Bool { file.hasPrefix("apple-notification") }
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/provider-tokens")

    static let cases: [Case] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.sorted().compactMap { file in
            guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(file).path),
                let object = try? JSONDecoder().decode([String: JSONValue].self, from: data),
                let token = object["token"]?.stringValue, let claims = object["claims"]?.objectValue
            else { return nil }
            return Case(
                file: file,
                provider: object["provider"]?.stringValue ?? "",
                token: token,
                claims: claims,
                jwk: object["jwk"],
                signatureVerified: object["signature_verified"]?.lenientBoolValue ?? false
            )
        }
    }()

    static let goodIDTokens = cases.filter { $0.signatureVerified && !$0.isNotification }
    static let badSignatureCases = cases.filter { !$0.signatureVerified }

    /// A verifier for the case's provider, keyed to jwks/ (Firebase: an OIDC provider with a
    /// JWKS file holding its case's key), accepting `audience`.
    static func verifier(for testCase: Case, audience: String) throws -> any IdentityVerifier {
        let logger = Logger(label: "fixtures")
        let fetcher = UnusedFetcher()
        switch testCase.provider {
        case "apple", "google":
            let providers = try defaultProviders()
            var configuration = testCase.provider == "apple" ? providers.apple : providers.google
            configuration.enabled = true
            configuration.audiences = [audience]
            configuration.skipNonceCheck = true
            let keySet = ProviderKeySet(
                provider: testCase.provider, source: .file(directory.appendingPathComponent("jwks/\(testCase.provider)-keys-collected.json").path),
                algorithm: .rs256, fetcher: fetcher, logger: logger
            )
            return IdentityVerifierRegistry.makeVerifier(configuration, keySet: keySet)
        default:
            let issuer = testCase.claims["iss"]?.stringValue ?? ""
            let jwksFile = FileManager.default.temporaryDirectory.appendingPathComponent("firebase-\(UUID().uuidString).json")
            let jwk = try JSONEncoder().encode(testCase.jwk ?? .null)
            try Data("{\"keys\":[".utf8 + jwk + "]}".utf8).write(to: jwksFile)
            RemovedAtExit.register(jwksFile.path)
            let providers = try AuthGateConfiguration.parse(
                yaml:
                    "providers: { oidc: [ { name: firebase, issuer: \"\(issuer)\", audiences: [\"\(audience)\"], jwks_file: \"\(jwksFile.path)\", skip_nonce_check: true } ] }",
                baseDirectory: "",
                environment: [:]
            ).providers
            let configuration = try #require(providers.oidc.first)
            let keySet = ProviderKeySet(provider: "firebase", source: .file(jwksFile.path), algorithm: .rs256, fetcher: fetcher, logger: logger)
            return OIDCVerifier(configuration: configuration, keySet: keySet)
        }
    }

    static func defaultProviders() throws -> ProvidersConfiguration {
        try AuthGateConfiguration.parse(yaml: "", baseDirectory: "", environment: [:]).providers
    }

    static func rejection(_ body: () async throws -> VerifiedIdentity) async -> AuthGateError.Code? {
        do {
            _ = try await body()
            return nil
        } catch let error as AuthGateError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test("every case is present: 30 with verified signatures, 2 negative")
    func inventory() {
        #expect(Self.cases.count == 32)
        #expect(Self.cases.filter(\.signatureVerified).count == 30)
        #expect(Self.goodIDTokens.count == 27)
    }

    @Test("verifies inside its validity window with its audience", arguments: goodIDTokens)
    func verifies(testCase: Case) async throws {
        let verifier = try Self.verifier(for: testCase, audience: testCase.audience)
        let identity = try await verifier.verify(
            idToken: testCase.token, rawNonce: nil, now: Date(timeIntervalSince1970: Double(testCase.issuedAt + 1)))
        #expect(identity.subject == testCase.claims["sub"]?.stringValue)
        #expect(identity.issuer == testCase.claims["iss"]?.stringValue)
        #expect(identity.identityData["provider_id"] == testCase.claims["sub"])
        if let email = testCase.claims["email"]?.stringValue {
            #expect(identity.email == email.lowercased())
            if testCase.provider == "apple" { #expect(identity.emailVerified, "Apple emails count as verified") }
        }
        if testCase.provider == "apple", let privateEmail = testCase.claims["is_private_email"] {
            #expect(identity.identityData["custom_claims"]?.objectValue?["is_private_email"] == privateEmail.lenientBoolValue.map(JSONValue.bool))
        }
    }

    @Test("is rejected one second after exp", arguments: goodIDTokens)
    func expired(testCase: Case) async throws {
        let verifier = try Self.verifier(for: testCase, audience: testCase.audience)
        let code = await Self.rejection {
            try await verifier.verify(idToken: testCase.token, rawNonce: nil, now: Date(timeIntervalSince1970: Double(testCase.expiry + 1)))
        }
        #expect(code == .expired)
    }

    @Test("is rejected for another audience", arguments: goodIDTokens)
    func wrongAudience(testCase: Case) async throws {
        let verifier = try Self.verifier(for: testCase, audience: "com.example.someone-else")
        let code = await Self.rejection {
            try await verifier.verify(idToken: testCase.token, rawNonce: nil, now: Date(timeIntervalSince1970: Double(testCase.issuedAt + 1)))
        }
        #expect(code == .audience)
    }

    @Test("is rejected with its payload altered by one character", arguments: goodIDTokens)
    func tamperedPayload(testCase: Case) async throws {
        let parts = testCase.token.split(separator: ".").map(String.init)
        var payload = Array(parts[1])
        let index = payload.count / 2
        payload[index] = payload[index] == "A" ? "B" : "A"
        let tampered = [parts[0], String(payload), parts[2]].joined(separator: ".")
        let verifier = try Self.verifier(for: testCase, audience: testCase.audience)
        let code = await Self.rejection {
            try await verifier.verify(idToken: tampered, rawNonce: nil, now: Date(timeIntervalSince1970: Double(testCase.issuedAt + 1)))
        }
        #expect(code == .badSignature)
    }

    @Test("the two unverifiable cases are rejected: right kid with a wrong signature, and an unknown kid")
    func negativeCases() async throws {
        #expect(Self.badSignatureCases.count == 2)
        for testCase in Self.badSignatureCases {
            let verifier = try Self.verifier(for: testCase, audience: testCase.audience)
            let code = await Self.rejection {
                try await verifier.verify(idToken: testCase.token, rawNonce: nil, now: Date(timeIntervalSince1970: Double(testCase.issuedAt + 1)))
            }
            #expect(code == (testCase.provider == "apple" ? .badSignature : .unknownKeyID), "\(testCase.file)")
        }
    }
}

/// A fetcher for key sets that must come from files.
struct UnusedFetcher: JWKSFetching {
    func fetch(_ url: String) async throws -> FetchedDocument {
        throw AuthGateError(.keysUnavailable, "no network in this test: \(url)")
    }
}
