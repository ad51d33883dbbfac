public import Crypto

/// `providers.apple.team_id`, `key_id`, `private_key_file`, `client_secret_ttl`: the credentials
/// AuthGate uses to call Apple's REST API (`/auth/token`, `/auth/revoke`). From them AuthGate
/// mints Apple's `client_secret` JWT itself (``AppleClientSecretMinter``); the client ids it may
/// mint for are the provider's `audiences` (the bundle id for native apps, the Services ID for the
/// web).
public struct AppleServerConfiguration: Sendable {
    /// The 10-character Team ID (`iss` of the client secret).
    public var teamID: String
    /// The 10-character Key ID of the "Sign in with Apple" key (`kid` of the client secret).
    public var keyID: String
    /// Where the `.p8` key was read from (shown by `check-config`; the key itself never is).
    public var privateKeyFile: String
    /// The `.p8` key: ES256 on P-256.
    public var privateKey: P256.Signing.PrivateKey
    /// How long each minted client secret is valid; it is renewed when half of it is gone.
    public var clientSecretLifetime: Duration
    /// Where Apple's REST API is (`api_url`, `https://appleid.apple.com`): `/auth/token` and
    /// `/auth/revoke` are under it. Tests point it at a fake Apple.
    public var apiURL: String

    /// Apple refuses client secrets valid for longer than this (15,777,000 s, six months).
    public static let maximumLifetime = Duration.seconds(15_777_000)

    /// Reads the settings from the `apple` section; nil when none of them is set. Every problem is
    /// reported on the key it is about, the key file by its path.
    static func read(_ section: ConfigurationSection) -> AppleServerConfiguration? {
        let teamID = section.optionalString("team_id")
        let keyID = section.optionalString("key_id")
        let keyPath = section.optionalString("private_key_file")
        let lifetime = section.duration("client_secret_ttl", default: .seconds(3600), minimum: .seconds(60), maximum: maximumLifetime)
        let hasEnvironmentKey = section.isOverridden("private_key")
        var apiURL = section.string("api_url", default: "https://appleid.apple.com")
        if !ConfigurationValueParsers.isFetchableURL(apiURL) {
            section.report("api_url", ConfigurationValueParsers.fetchableURLRule)
        }
        while apiURL.hasSuffix("/") { apiURL.removeLast() }
        guard teamID != nil || keyID != nil || keyPath != nil || hasEnvironmentKey else {
            for key in ["client_secret_ttl", "api_url"] where section.contains(key) {
                section.report(key, "only used with team_id, key_id and private_key_file; set them or remove it")
            }
            return nil
        }
        let together = "set team_id, key_id and private_key_file together to call Apple's REST API"
        for (key, value) in [("team_id", teamID), ("key_id", keyID)] {
            guard let value else {
                section.report(key, together)
                continue
            }
            if !isAppleIdentifier(value) { section.report(key, "\"\(value)\" must be Apple's 10-character identifier (A-Z, 0-9)") }
        }
        guard let pem = SecretReader().secret(in: section, key: "private_key") else {
            section.report("private_key_file", together)
            return nil
        }
        let source = keyPath.map { SecretReader.resolve($0, against: section.baseDirectory) } ?? "the environment"
        guard let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            section.report("private_key_file", "\"\(source)\" is not a P-256 private key in PEM form (the .p8 file Apple issues)")
            return nil
        }
        guard let teamID, let keyID else { return nil }
        return AppleServerConfiguration(
            teamID: teamID, keyID: keyID, privateKeyFile: source, privateKey: privateKey, clientSecretLifetime: lifetime,
            apiURL: apiURL)
    }

    /// Team IDs and Key IDs are ten upper-case letters or digits.
    static func isAppleIdentifier(_ text: String) -> Bool {
        text.utf8.count == 10
            && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }
}
