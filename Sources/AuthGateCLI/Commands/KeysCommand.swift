import ArgumentParser
import AuthGateCore
import Foundation

/// `authgate keys …`: signing-key management.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage AuthGate's signing keys.",
        subcommands: [ListKeysCommand.self, GenerateKeyCommand.self]
    )
}

/// `authgate keys list`: each configured key with its algorithm, state and whether `/jwks`
/// publishes it (active and published keys, and retired ones until their tokens expire).
struct ListKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the configured signing keys.")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try options.loadOrExit()
        let keyRing: SigningKeyRing
        do {
            keyRing = try SigningKeyRing.load(configuration.tokens, allowGenerated: false)
        } catch {
            printError("cannot load the signing keys: \(error)")
            throw ExitStatus.configurationError
        }
        let published = Set(keyRing.publishedKeys.map(\.kid))
        if output.json {
            Output.json(
                .object([
                    "keys": .array(
                        keyRing.keys.map { key in
                            .object([
                                "kid": .string(key.kid), "alg": .string(key.algorithm.rawValue), "state": .string(key.state.rawValue),
                                "in_jwks": .bool(published.contains(key.kid))
                            ])
                        })
                ]))
            return
        }
        Output.table(
            ["KID", "ALG", "STATE", "IN JWKS"],
            keyRing.keys.map { [$0.kid, $0.algorithm.rawValue, $0.state.rawValue, published.contains($0.kid) ? "yes" : "no"] })
    }
}

/// `authgate keys generate --alg ES256 --out F`: writes a new private key as PKCS#8 PEM (mode
/// 0600) and prints the configuration entry to add it with.
struct GenerateKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "generate", abstract: "Write a new signing key (PEM, mode 0600).")

    @Option(name: .customLong("alg"), help: "ES256 (default) or RS256.")
    var algorithm: String = "ES256"

    @Option(help: "The PEM file to write; refused if it exists.")
    var out: String

    @Option(help: "The key id to print in the configuration entry (default: k-<UTC date>-<random>).")
    var kid: String?

    func run() async throws {
        guard let parsed = TokensConfiguration.SigningAlgorithm(rawValue: algorithm.uppercased()) else {
            printError("--alg must be ES256 or RS256, got \"\(algorithm)\"")
            throw ExitStatus.configurationError
        }
        guard !FileManager.default.fileExists(atPath: out) else {
            throw refusal("\(out) exists; refusing to overwrite a key")
        }
        let keyID = kid ?? Self.defaultKeyID()
        let key = try SigningKey.generate(kid: keyID, algorithm: parsed)
        guard PrivateFile.create(out, contents: Array(key.pemRepresentation.utf8)) else {
            throw refusal("cannot write \(out)")
        }
        print("wrote \(parsed.rawValue) key to \(out)")
        print("add to tokens.signing_keys (as published first when rotating):")
        print("  - { kid: \(keyID), file: \(out), state: active, algorithm: \(parsed.rawValue) }")
    }

    static func defaultKeyID() -> String {
        let date = Date().formatted(.iso8601.year().month().day())
        let suffix = (0..<3).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        return "k-\(date)-\(suffix)"
    }
}
