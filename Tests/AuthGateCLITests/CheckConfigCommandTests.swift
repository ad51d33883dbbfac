import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `authgate check-config` through the real executable.
@Suite("authgate check-config", .timeLimit(.minutes(3)))
struct CheckConfigCommandTests {
    private func writeConfig(_ yaml: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-\(UUID().uuidString).yaml")
        try yaml.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test("a valid file prints the effective configuration and exits 0")
    func valid() async throws {
        let file = try writeConfig("server: { port: 8088 }\nproviders: { anonymous: { enabled: true } }\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await AuthGateBinary.run(["check-config", "--config", file.path])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("port: 8088"))
        #expect(result.standardOutput.contains("issuer: http://127.0.0.1:8088/auth/v1"))
        #expect(result.standardOutput.contains("development mode"))
    }

    @Test("the repository's development configuration is valid")
    func repositoryConfig() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let result = try await AuthGateBinary.run(["check-config", "--config", root.appendingPathComponent("config/authgate.yaml").path])
        #expect(result.status == 0, "\(result.standardError)")
    }

    @Test(
        "invalid files exit 1 and name the offending key and value",
        arguments: [
            ("tokens: { access_token_ttl: 1 hour }", "tokens.access_token_ttl: \"1 hour\" is not a duration"),
            ("store: { kind: postgres }", "store.kind: \"postgres\" is not one of memory, redis"),
            ("routes: [ { name: api, path_prefix: /api/ } ]", "routes[0].upstreams: list at least one upstream"),
            ("server: { port: http }", "server.port: expected a whole number from 0 to 65535, got \"http\"")
        ]
    )
    func invalid(yaml: String, expected: String) async throws {
        let file = try writeConfig(yaml)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await AuthGateBinary.run(["check-config", "--config", file.path])
        #expect(result.status == 1)
        #expect(result.standardError.contains(expected), "stderr was: \(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    @Test("AUTHGATE_CONFIG names the file and AUTHGATE_SECTION_KEY overrides a value")
    func environment() async throws {
        let file = try writeConfig("server: { port: 8088 }\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await AuthGateBinary.run(["check-config"], environment: ["AUTHGATE_CONFIG": file.path, "AUTHGATE_SERVER_PORT": "8099"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("port: 8099"))
        #expect(result.standardOutput.contains("# environment overrides: AUTHGATE_SERVER_PORT"))
    }

    @Test("a Redis password from the environment never appears in the printout")
    func maskedSecrets() async throws {
        let file = try writeConfig("store: { kind: memory }\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await AuthGateBinary.run(
            ["check-config", "--config", file.path],
            environment: ["AUTHGATE_STORE_KIND": "redis", "AUTHGATE_STORE_REDIS_URL": "redis://app:s3cret-pw@127.0.0.1:6379/0"]
        )
        // Redis without keys is refused, and the message must not leak the password either.
        #expect(result.status == 1)
        #expect(!(result.standardOutput + result.standardError).contains("s3cret-pw"))
        #expect(result.standardError.contains("tokens.signing_keys"))
    }

    @Test("a missing file is reported, exit 1")
    func missingFile() async throws {
        let result = try await AuthGateBinary.run(["check-config", "--config", "/nonexistent/authgate.yaml"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("cannot read the configuration file \"/nonexistent/authgate.yaml\""))
    }
}
