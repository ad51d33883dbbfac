import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The outside audit's findings against what operators run: the `authgate` commands and what
/// `authgate serve` writes to its log.
@Suite("Operator audit findings", .serialized, .timeLimit(.minutes(3)))
struct OperatorAuditTests {
    private static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("AuthGateCoreTests/Fixtures/provider-tokens")

    private func writeConfig(_ yaml: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString).yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    // MARK: Finding 6: passwords in messages

    @Test(
        "a Redis password never reaches check-config's or serve's output, whatever the URL's other faults",
        arguments: [
            "redis://:hunter2@127.0.0.1:6379/x", "redis://:hunter2@127.0.0.1:99999/0", "redis://app:hunter2@/0", "redis://:hun?ter2@127.0.0.1/0",
            "redis://:hunter2#x@127.0.0.1/0", "redis://:hunter2@127.0.0.1/0?db=1", "rediss://:hunter2@127.0.0.1/x", "redis://:hunter2%zz@127.0.0.1/0"
        ]
    )
    func redisPasswords(url: String) async throws {
        let file = try writeConfig("store: { kind: redis }\n")
        defer { try? FileManager.default.removeItem(at: file) }
        for command in [["check-config"], ["serve"]] {
            let result = try await AuthGateBinary.run(command + ["--config", file.path], environment: ["AUTHGATE_STORE_REDIS_URL": url])
            #expect(result.status != 0, "\(url) was accepted")
            let output = result.standardOutput + result.standardError
            for fragment in ["hunter2", "unter", "ter2", "ter#", "r2#x", "hun?"] {
                #expect(!output.contains(fragment), "\(command[0]) printed \(fragment) for \(url): \(output)")
            }
        }
    }

    // MARK: Finding 7: the key file

    @Test("keys generate writes the key 0600 and never through a link or over a file")
    func keyFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("k1.pem")
        let made = try await AuthGateBinary.run(["keys", "generate", "--out", key.path, "--kid", "k1"])
        #expect(made.status == 0, "\(made.standardError)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: key.path)[.posixPermissions] as? NSNumber)
        #expect(mode.intValue & 0o777 == 0o600)
        #expect(try await AuthGateBinary.run(["keys", "generate", "--out", key.path]).status != 0, "an existing key was overwritten")
        // A dangling link where the key should go: writing through it would put the key elsewhere.
        let elsewhere = directory.appendingPathComponent("elsewhere.pem")
        let link = directory.appendingPathComponent("k2.pem")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: elsewhere.path)
        #expect(try await AuthGateBinary.run(["keys", "generate", "--out", link.path]).status != 0)
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path), "the key was written through the link")
    }

    // MARK: Finding 9: verify-id-token on tokens from the field

    @Test("verify-id-token without --nonce checks everything else and says the nonce was not checked; --at is range-checked")
    func verifyWithoutNonce() async throws {
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("apple-W6WcOKB-2023-10-fastcrypto-zklogin-nonce.json"))
        let object = try JSONDecoder().decode([String: JSONValue].self, from: data)
        let claims = try #require(object["claims"]?.objectValue)
        let token = try #require(object["token"]?.stringValue)
        let audience = try #require(claims["aud"]?.stringValue)
        let issuedAt = try #require(claims["iat"]?.integerValue)
        let base = [
            "verify-id-token", "--provider", "apple", "--jwks-file", Self.fixtures.appendingPathComponent("jwks/apple-keys-collected.json").path,
            "--audience", audience
        ]
        let result = try await AuthGateBinary.run(base + ["--at", String(issuedAt + 1), token])
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(result.standardOutput.contains("nonce: not checked (pass --nonce RAW to check it)"))
        for at in ["9223372036854775807", "-1", "253402300800"] {
            let refused = try await AuthGateBinary.run(base + ["--at", at, token])
            #expect(refused.status == 2, "--at \(at): \(refused.standardError)")
        }
    }

    // MARK: Finding 12: require_claims on user_metadata

    @Test("require_claims on user_metadata is refused at check-config and at start, pointing to app_metadata")
    func userMetadataClaims() async throws {
        let file = try writeConfig(
            "routes: [ { name: r, path_prefix: /r/, upstreams: [\"http://127.0.0.1:1\"], require_claims: { user_metadata.plan: pro } } ]\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try await AuthGateBinary.run(["check-config", "--config", file.path])
        #expect(check.status == 1)
        #expect(check.standardError.contains("user_metadata") && check.standardError.contains("app_metadata"), "\(check.standardError)")
        let serve = try await AuthGateBinary.run(["serve", "--config", file.path])
        #expect(serve.status == 2)
    }

    // MARK: Finding 7: what the log holds of a client's fields

    @Test("a client-supplied provider is logged as a configured name or unknown, never verbatim")
    func providerFieldInLog() async throws {
        let files = try GatewayFiles("provider-log")
        defer { files.remove() }
        try files.writeConfig("server: { host: 127.0.0.1 }\nrate_limits: { token: off }\nlogging: { level: trace }\n")
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        let secretish = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzZWNyZXQtc3ViamVjdCJ9.c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtYmUtbG9nZ2Vk"
        let (_, response) = try await HTTP.send(
            URL(string: "http://127.0.0.1:\(server.port)/auth/v1/token?grant_type=id_token")!, method: "POST",
            json: "{\"provider\":\"\(secretish)\",\"id_token\":\"x.y.z\"}"
        )
        #expect(response.statusCode == 400)
        #expect(await server.stop() == 0)
        #expect(!server.log.contains("c2lnbmF0dXJl"), "the provider field reached the log")
        #expect(server.log.contains("\"gw.provider\":\"unknown\""))
    }
}
