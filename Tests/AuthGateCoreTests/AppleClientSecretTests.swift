import Crypto
import Foundation
import Testing

@testable import AuthGateCore

@Suite("Apple's client secret: configuration, minting, renewal", .timeLimit(.minutes(3)))
struct AppleClientSecretTests {
    /// A temporary directory holding a `.p8` key (PKCS#8 PEM, as Apple issues it).
    private struct KeyDirectory {
        let path: String
        let key = P256.Signing.PrivateKey()

        init() throws {
            path = NSTemporaryDirectory() + "authgate-apple-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try key.pemRepresentation.write(toFile: path + "/AuthKey_KEY1234567.p8", atomically: true, encoding: .utf8)
        }

        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    private func configuration(_ apple: String, in directory: KeyDirectory, environment: [String: String] = [:]) throws -> AuthGateConfiguration {
        try AuthGateConfiguration.parse(
            yaml: "providers: { apple: { enabled: true, audiences: [com.example.app, com.example.web], \(apple) } }",
            baseDirectory: directory.path, environment: environment.merging([Self.tokenKeyVariable: Self.tokenKey]) { first, _ in first })
    }

    private func issues(_ apple: String, in directory: KeyDirectory) -> [ConfigurationError.Issue] {
        do {
            _ = try configuration(apple, in: directory)
            return []
        } catch let error as ConfigurationError {
            return error.issues
        } catch {
            return [ConfigurationError.Issue(key: "unexpected", message: "\(error)")]
        }
    }

    /// The token encryption key Apple's credentials come with.
    static let tokenKeyVariable = "AUTHGATE_PROVIDERS_TOKEN_ENCRYPTION_KEY"
    static let tokenKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    private static let credentials = "team_id: TEAM123456, key_id: KEY1234567, private_key_file: AuthKey_KEY1234567.p8"

    @Test("a secret is an ES256 JWT with Apple's header and claims, signed by the .p8 key")
    func minted() throws {
        let directory = try KeyDirectory()
        defer { directory.remove() }
        let server = try #require(try configuration(Self.credentials, in: directory).providers.appleServer)
        let minter = AppleClientSecretMinter(configuration: server, clientIDs: ["com.example.app", "com.example.web"])
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let secret = try minter.clientSecret(for: "com.example.web", now: now)

        let parts = secret.value.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        let header = try JSONValue.parse(try #require(Base64URL.decode(parts[0])))
        let claims = try JSONValue.parse(try #require(Base64URL.decode(parts[1])))
        #expect(header == .object(["alg": "ES256", "kid": "KEY1234567"]))
        #expect(
            claims
                == .object([
                    "iss": "TEAM123456", "sub": "com.example.web", "aud": "https://appleid.apple.com", "iat": .integer(1_790_000_000),
                    "exp": .integer(1_790_003_600)
                ]))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(directory.key.publicKey.isValidSignature(signature, for: SHA256.hash(data: Array((parts[0] + "." + parts[1]).utf8))))
        #expect(secret.expiresAt - secret.issuedAt <= 15_777_000)
    }

    @Test("a secret is reused while more than half of its life is left, then renewed; each client id has its own")
    func renewal() throws {
        let directory = try KeyDirectory()
        defer { directory.remove() }
        let server = try #require(try configuration(Self.credentials + ", client_secret_ttl: 10m", in: directory).providers.appleServer)
        let minter = AppleClientSecretMinter(configuration: server, clientIDs: ["com.example.app", "com.example.web"])
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let first = try minter.clientSecret(for: "com.example.app", now: start)
        #expect(first.expiresAt == 1_790_000_600)
        #expect(try minter.clientSecret(for: "com.example.app", now: start.addingTimeInterval(299)) == first)
        let renewed = try minter.clientSecret(for: "com.example.app", now: start.addingTimeInterval(300))
        #expect(renewed != first)
        #expect(renewed.issuedAt == 1_790_000_300)
        let web = try minter.clientSecret(for: "com.example.web", now: start)
        #expect(web.clientID == "com.example.web" && web.value != renewed.value)
        // A clock that went back does not reuse a secret "issued in the future".
        #expect(try minter.clientSecret(for: "com.example.web", now: start.addingTimeInterval(-10)).issuedAt == 1_789_999_990)
        #expect(minter.status().earliestExpiry == 1_790_000_590)
    }

    @Test("no secret for a client id that is not one of the provider's audiences")
    func unknownClient() throws {
        let directory = try KeyDirectory()
        defer { directory.remove() }
        let server = try #require(try configuration(Self.credentials, in: directory).providers.appleServer)
        let minter = AppleClientSecretMinter(configuration: server, clientIDs: ["com.example.app"])
        #expect {
            _ = try minter.clientSecret(for: "com.attacker.app")
        } throws: { ($0 as? AuthGateError)?.code == .appleClientUnknown }
    }

    @Test("bad identifiers, a missing setting, an unreadable or non-P-256 key: each refused on its key, the file named")
    func validation() throws {
        let directory = try KeyDirectory()
        defer { directory.remove() }
        #expect(try configuration("", in: directory).providers.appleServer == nil)
        let badTeam = issues("team_id: team, key_id: KEY1234567, private_key_file: AuthKey_KEY1234567.p8", in: directory)
        #expect(badTeam.contains { $0.key == "providers.apple.team_id" && $0.message.contains("10-character") })
        let missing = issues("team_id: TEAM123456, private_key_file: AuthKey_KEY1234567.p8", in: directory)
        #expect(missing.contains { $0.key == "providers.apple.key_id" })
        let absent = issues("team_id: TEAM123456, key_id: KEY1234567, private_key_file: nowhere.p8", in: directory)
        #expect(absent.contains { $0.key == "providers.apple.private_key_file" && $0.message.contains("nowhere.p8") })
        try P384.Signing.PrivateKey().pemRepresentation.write(toFile: directory.path + "/p384.p8", atomically: true, encoding: .utf8)
        let wrongCurve = issues("team_id: TEAM123456, key_id: KEY1234567, private_key_file: p384.p8", in: directory)
        #expect(
            wrongCurve.contains { $0.key == "providers.apple.private_key_file" && $0.message.contains("p384.p8") && $0.message.contains("P-256") })
        let alone = issues("client_secret_ttl: 30m", in: directory)
        #expect(alone.contains { $0.key == "providers.apple.client_secret_ttl" && $0.message.contains("team_id") })
        let tooLong = issues(Self.credentials + ", client_secret_ttl: 200d", in: directory)
        #expect(tooLong.contains { $0.key == "providers.apple.client_secret_ttl" })
    }

    @Test("check-config shows the identifiers and the key's file, never the key")
    func rendering() throws {
        let directory = try KeyDirectory()
        defer { directory.remove() }
        let rendered = try configuration(Self.credentials, in: directory).renderedYAML()
        #expect(rendered.contains("team_id: TEAM123456"))
        #expect(rendered.contains("key_id: KEY1234567"))
        #expect(rendered.contains("AuthKey_KEY1234567.p8"))
        #expect(rendered.contains("client_secret_ttl: 1h"))
        #expect(!rendered.contains("PRIVATE KEY"))
    }
}
