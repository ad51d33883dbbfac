/// `tokens:`: the access tokens and refresh tokens AuthGate issues.
public struct TokensConfiguration: Sendable {
    /// The signing algorithms AuthGate mints with (those the Supabase clients can decode).
    public enum SigningAlgorithm: String, Sendable, CaseIterable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    /// A key's part in rotation.
    public enum KeyState: String, Sendable, CaseIterable {
        /// Signs new tokens (exactly one key) and is published.
        case active
        /// Published in the JWKS but not signing yet, so clients learn it before rotation.
        case published
        /// Published and verifying until the tokens it signed have expired; never signs.
        case retired
    }

    /// One entry of `signing_keys`.
    public struct SigningKey: Sendable, Hashable {
        public var kid: String
        /// Absolute path of the PEM file holding the private key.
        public var file: String
        public var state: KeyState
        public var algorithm: SigningAlgorithm
    }

    /// `tokens.refresh`.
    public struct Refresh: Sendable, Hashable {
        /// How long the immediate parent of the current refresh token still returns the current child.
        public var reuseInterval: Duration
        /// Longest life of a session regardless of use; zero for no limit.
        public var sessionTimebox: Duration
        /// A session unused this long ends; zero for no limit.
        public var inactivityTimeout: Duration
        /// The most sessions one user keeps: a sign-in past it ends the user's oldest sessions;
        /// zero for no limit.
        public var maxSessionsPerUser: Int
    }

    /// `iss` of minted tokens.
    public var issuer: String
    /// `aud` of minted tokens.
    public var audience: String
    /// Lifetime of access tokens.
    public var accessTokenTTL: Duration
    /// `access_token_ttl` when the configuration does not set it: an hour, as GoTrue's default.
    public static let defaultAccessTokenTTL = Duration.seconds(3600)
    /// Signing keys in configuration order; empty in development mode (a key is generated).
    public var signingKeys: [SigningKey]
    public var refresh: Refresh
    /// Roles allowed to call the admin API.
    public var adminRoles: [String]

    init(reading section: ConfigurationSection, defaultIssuer: String) {
        issuer = section.string("issuer", default: defaultIssuer)
        audience = section.string("audience", default: "authenticated")
        if audience.isEmpty { section.report("audience", "must not be empty") }
        accessTokenTTL = section.duration(
            "access_token_ttl", default: Self.defaultAccessTokenTTL, minimum: .seconds(30), maximum: .seconds(7 * 86_400))
        var keys: [SigningKey] = []
        for keySection in section.sections("signing_keys") {
            let kid = keySection.string("kid", default: "")
            if kid.isEmpty || kid.count > 128 || kid.contains(where: { $0.isWhitespace || $0 == "\"" }) {
                keySection.report("kid", "\"\(kid)\" must be 1-128 characters without spaces or quotes")
            }
            let file = keySection.string("file", default: "")
            if file.isEmpty { keySection.report("file", "the path of the key's PEM file is required") }
            let key = SigningKey(
                kid: kid,
                file: SecretReader.resolve(file, against: keySection.baseDirectory),
                state: keySection.choice("state", default: .active),
                algorithm: keySection.choice("algorithm", default: .es256)
            )
            keySection.finish()
            if keys.contains(where: { $0.kid == kid }) { keySection.report("kid", "\"\(kid)\" is used by another signing key") }
            keys.append(key)
        }
        let active = keys.filter { $0.state == .active }.count
        if !keys.isEmpty, active != 1 {
            section.report("signing_keys", "exactly one key must be active, found \(active)")
        }
        signingKeys = keys
        let refreshSection = section.section("refresh")
        refresh = Refresh(
            reuseInterval: refreshSection.duration("reuse_interval", default: .seconds(10), maximum: .seconds(3600)),
            sessionTimebox: refreshSection.duration("session_timebox", default: .zero),
            inactivityTimeout: refreshSection.duration("inactivity_timeout", default: .zero),
            maxSessionsPerUser: refreshSection.int("max_sessions_per_user", default: 100, in: 0...100_000)
        )
        refreshSection.finish()
        adminRoles = section.stringList("admin_roles", default: ["service_role", "supabase_admin"])
        section.finish()
    }
}
