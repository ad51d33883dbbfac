import ArgumentParser
import AsyncHTTPClient
import AuthGateCore
import Foundation
import Logging

/// `authgate verify-id-token`: verifies a provider ID token the way sign-in does, with a chosen
/// clock, and prints the claims (exit 0) or the precise reason (exit 1). It never records the
/// token as used, so it is safe to run on a token a client is about to exchange.
struct VerifyIDTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-id-token",
        abstract: "Verify a provider ID token and print its claims or the reason it is rejected.",
        discussion: """
            The provider's settings come from the configuration (a disabled provider is checked as if enabled); \
            --jwks-file and --audience override them. Exit 0 valid, 1 rejected, 2 usage or configuration error.
            """
    )

    @OptionGroup var options: ConfigurationOptions

    @Option(help: "apple, google, or the name of an OIDC provider in the configuration.")
    var provider: String

    @Option(name: .customLong("jwks-file"), help: "Verify against this JWKS file instead of the configured key source.")
    var jwksFile: String?

    @Option(name: .customLong("audience"), help: "An accepted audience (repeatable); replaces the configured list.")
    var audiences: [String] = []

    @Option(help: "The raw nonce the client sent (its SHA-256 must equal the token's nonce claim).")
    var nonce: String?

    @Option(
        name: .customLong("access-token"),
        help: "The provider access token the client sent with it (checked against the token's at_hash, as sign-in does).")
    var accessToken: String?

    @Option(name: .customLong("at"), help: "Verify as of this UNIX time in seconds instead of now.")
    var at: Int64?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Argument(help: "The ID token (compact JWS).")
    var token: String

    func validate() throws {
        if let at, !(0...253_402_300_799).contains(at) {
            throw ValidationError("--at must be a UNIX time in seconds from 0 to 253402300799 (the year 9999), got \(at)")
        }
    }

    func run() async throws {
        let loaded: AuthGateConfiguration
        do {
            loaded = try options.load()
        } catch {
            printError(error.description)
            throw ExitStatus.configurationError
        }
        let builtIn = [loaded.providers.apple, loaded.providers.google] + loaded.providers.oidc
        guard var configuration = builtIn.first(where: { $0.name == provider }) else {
            printError("unknown provider \"\(provider)\"; use apple, google or one of: \(loaded.providers.oidc.map(\.name).joined(separator: ", "))")
            throw ExitStatus.configurationError
        }
        configuration.enabled = true
        // Without --nonce, everything else is checked and the output says the nonce was not: a
        // token captured in the field can still be diagnosed.
        let nonceUnchecked = nonce == nil
        if nonceUnchecked { configuration.skipNonceCheck = true }
        if !audiences.isEmpty { configuration.audiences = audiences }
        if let jwksFile { configuration.keySource = .file(jwksFile) }
        guard !configuration.audiences.isEmpty else {
            printError("no accepted audience: pass --audience or configure providers.\(provider).audiences")
            throw ExitStatus.configurationError
        }
        var logger = Logger(label: "authgate.verify-id-token")
        logger.logLevel = .warning
        let client = HTTPClientService.makeKeyFetchingClient()
        let keySet = ProviderKeySet(
            provider: configuration.name,
            source: IdentityVerifierRegistry.source(of: configuration),
            algorithm: configuration.algorithm,
            fetcher: HTTPJWKSFetcher(client: client),
            logger: logger
        )
        let verifier = IdentityVerifierRegistry.makeVerifier(configuration, keySet: keySet)
        let now = at.map { Date(timeIntervalSince1970: Double($0)) } ?? Date()
        let outcome: Result<VerifiedIdentity, any Error>
        do {
            outcome = .success(
                try await verifier.verify(
                    idToken: token.trimmingCharacters(in: .whitespacesAndNewlines), rawNonce: nonce, accessToken: accessToken, now: now))
        } catch {
            outcome = .failure(error)
        }
        try? await client.shutdown()
        do {
            print(try render(try outcome.get(), nonceUnchecked: nonceUnchecked))
        } catch let error as AuthGateError {
            if json {
                print(try Self.jsonText(["valid": .bool(false), "reason": .string(error.code.description), "message": .string(error.message)]))
            } else {
                print("rejected: \(error.code): \(error.message)")
            }
            throw ExitStatus.refused
        }
    }

    private func render(_ identity: VerifiedIdentity, nonceUnchecked: Bool) throws -> String {
        let nonceNote = nonceUnchecked && identity.claims["nonce"] != nil ? "not checked (pass --nonce RAW to check it)" : nil
        if json {
            return try Self.jsonText([
                "valid": .bool(true),
                "nonce": nonceNote.map(JSONValue.string) ?? (nonceUnchecked ? "absent" : "checked"),
                "provider": .string(identity.provider),
                "subject": .string(identity.subject),
                "email": identity.email.map(JSONValue.string) ?? .null,
                "email_verified": .bool(identity.emailVerified),
                "claims": .object(identity.claims),
                "identity_data": .object(identity.identityData)
            ])
        }
        var lines = ["valid: \(identity.provider) ID token for subject \(identity.subject)"]
        if let email = identity.email { lines.append("email: \(email) (\(identity.emailVerified ? "verified" : "not verified"))") }
        if let nonceNote { lines.append("nonce: \(nonceNote)") }
        lines.append("claims:")
        lines.append(try Self.jsonText(identity.claims))
        return lines.joined(separator: "\n")
    }

    private static func jsonText(_ object: [String: JSONValue]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(object), as: UTF8.self)
    }
}
