import ArgumentParser
import AuthGateCore
import Foundation

/// `authgate tokens …`: look inside access tokens, and mint admin tokens.
struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Inspect access tokens and mint service_role tokens.",
        subcommands: [InspectTokenCommand.self, ServiceRoleTokenCommand.self]
    )
}

/// `authgate tokens inspect <jwt>`: header, claims, which key, valid or why not, and whether its
/// session is still alive (when the store is Redis).
struct InspectTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Show a token's header and claims, and whether it is valid now.")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The access token (a JWT).")
    var token: String

    func run() async throws {
        let configuration = try options.loadOrExit()
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(String(parts[0])).flatMap({ try? JSONValue.parse($0) }),
            let claims = Base64URL.decode(String(parts[1])).flatMap({ try? JSONValue.parse($0) })
        else {
            throw refusal("not a JWT (three base64url parts with JSON header and claims)")
        }
        let kid = header.objectValue?["kid"]?.stringValue
        let keyRing = try? SigningKeyRing.load(configuration.tokens, allowGenerated: false)
        let key = keyRing?.keys.first { $0.kid == kid }
        var verdict = "valid"
        var verified: AccessTokenClaims?
        if let keyRing {
            do {
                verified = try AccessTokenVerifier(keyRing: keyRing, issuer: configuration.tokens.issuer, audience: configuration.tokens.audience)
                    .verify(token, now: Date())
            } catch let error as AuthGateError {
                verdict = "invalid: \(error.code)"
            }
        } else {
            verdict = "unknown: the configuration names no signing keys"
        }
        var session = "-"
        if let verified, let sessionID = verified.sessionID, configuration.store.kind == .redis {
            session = try await AdminStore.run(options) { opened in
                try await opened.store.session(userID: verified.sub, sessionID: sessionID) == nil ? "revoked or ended" : "alive"
            }
        }
        if output.json {
            Output.json(
                .object([
                    "header": header, "claims": claims,
                    "key": key.map { .string("\($0.kid) (\($0.algorithm.rawValue), \($0.state.rawValue))") } ?? .null,
                    "verdict": .string(verdict), "session": .string(session)
                ]))
            return
        }
        print("header:  \(String(decoding: header.serialized(), as: UTF8.self))")
        print("claims:  \(String(decoding: claims.serialized(), as: UTF8.self))")
        print(
            "key:     \(key.map { "\($0.kid) (\($0.algorithm.rawValue), \($0.state.rawValue))" } ?? "no configured key has kid \(kid ?? "(none)")")")
        print("verdict: \(verdict)")
        print("session: \(session)")
        if verified == nil { throw ExitStatus.refused }
    }
}

/// `authgate tokens service-role --ttl 1h`: an access token with role `service_role`, signed by
/// the active key, for the admin API.
struct ServiceRoleTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "service-role", abstract: "Mint a service_role token for the admin API.")

    @OptionGroup var options: ConfigurationOptions
    @Option(help: "Lifetime, like 15m or 1h (at most 24h).")
    var ttl = "1h"

    func validate() throws {
        guard let duration = ConfigurationValueParsers.duration(ttl), duration > .zero, duration <= .seconds(86_400) else {
            throw ValidationError("--ttl must be a duration from 1s to 24h, like 1h")
        }
    }

    func run() async throws {
        let configuration = try options.loadOrExit()
        guard !configuration.tokens.signingKeys.isEmpty, let keyRing = try? SigningKeyRing.load(configuration.tokens, allowGenerated: false) else {
            printError("tokens.signing_keys names no usable key: a service_role token must be signed by the gateways' key")
            throw ExitStatus.configurationError
        }
        let now = Int64(Date().timeIntervalSince1970)
        let lifetime = Int64(ConfigurationValueParsers.duration(ttl)?.inSeconds ?? 3600)
        let claims = AccessTokenClaims(
            iss: configuration.tokens.issuer, sub: "service_role", aud: configuration.tokens.audience, exp: now + lifetime, iat: now, email: "",
            phone: "",
            appMetadata: [:], userMetadata: [:], role: "service_role", aal: "aal1", amr: [], sessionID: nil, isAnonymous: false
        )
        print(try AccessTokenIssuer(keyRing: keyRing).mint(claims))
    }
}
