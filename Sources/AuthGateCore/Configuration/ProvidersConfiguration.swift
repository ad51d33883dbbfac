public import Crypto

/// `providers:`: who may sign in, and how their ID tokens are checked.
public struct ProvidersConfiguration: Sendable {
    /// Where a provider's signing keys come from.
    public enum KeySource: Sendable, Hashable {
        /// Fetched (and cached) from this JWKS URL.
        case url(String)
        /// Read from this JWKS file (offline use and tests).
        case file(String)
        /// Found through the issuer's `/.well-known/openid-configuration` (`jwks_uri`).
        case discovery
    }

    /// The algorithms accepted for provider ID tokens; set per provider, never taken from a token.
    public enum VerificationAlgorithm: String, Sendable, CaseIterable {
        case rs256 = "RS256"
        case rs384 = "RS384"
        case rs512 = "RS512"
        case es256 = "ES256"
        case es384 = "ES384"
    }

    /// Settings shared by every ID-token provider (Apple, Google, each OIDC issuer).
    public struct IDTokenProvider: Sendable, Hashable {
        /// The provider name used in requests (`apple`, `google`, or an OIDC name).
        public var name: String
        public var enabled: Bool
        /// Accepted issuers (`iss`).
        public var issuers: [String]
        /// Accepted audiences (`aud`): bundle ids, service ids, client ids.
        public var audiences: [String]
        public var keySource: KeySource
        public var algorithm: VerificationAlgorithm
        /// Skip GoTrue's nonce check (for clients that cannot send a nonce).
        public var skipNonceCheck: Bool
        /// Require the raw nonce to be one AuthGate issued (`POST /auth/v1/nonce`).
        public var requireServerNonce: Bool
        /// Allowed lateness for `exp` (none by default: an expired token is expired).
        public var leeway: Duration
        /// Allowed clock skew for `nbf` and `iat`: a provider whose clock runs a little ahead
        /// still signs users in (Google's own libraries allow 300 s).
        public var clockSkew: Duration
    }

    /// `providers.anonymous`.
    public struct Anonymous: Sendable, Hashable {
        public var enabled: Bool
    }

    public var apple: IDTokenProvider
    /// Apple's REST API credentials (`team_id`, `key_id`, `private_key_file`); nil when not set.
    public var appleServer: AppleServerConfiguration?
    public var google: IDTokenProvider
    /// Google's token revocation endpoint (`providers.google.revocation_url`).
    public var googleRevocationURL: String
    /// The AES-256 key sealing the provider refresh tokens AuthGate keeps
    /// (`providers.token_encryption_key_file`, or `AUTHGATE_PROVIDERS_TOKEN_ENCRYPTION_KEY`);
    /// required with Apple's REST API credentials.
    public var tokenEncryptionKey: SymmetricKey?
    public var anonymous: Anonymous
    /// Generic OpenID Connect issuers, each with a unique name.
    public var oidc: [IDTokenProvider]

    /// Every enabled ID-token provider.
    public var enabledIDTokenProviders: [IDTokenProvider] {
        ([apple, google] + oidc).filter(\.enabled)
    }

    init(reading section: ConfigurationSection) {
        let appleSection = section.section("apple")
        appleServer = AppleServerConfiguration.read(appleSection)
        apple = Self.provider(
            appleSection,
            name: "apple",
            issuers: ["https://appleid.apple.com", "https://account.apple.com"],
            defaultJWKS: "https://appleid.apple.com/auth/keys"
        )
        let googleSection = section.section("google")
        googleRevocationURL = googleSection.string("revocation_url", default: "https://oauth2.googleapis.com/revoke")
        if !ConfigurationValueParsers.isFetchableURL(googleRevocationURL) {
            googleSection.report("revocation_url", ConfigurationValueParsers.fetchableURLRule)
        }
        google = Self.provider(
            googleSection,
            name: "google",
            issuers: ["https://accounts.google.com", "accounts.google.com"],
            defaultJWKS: "https://www.googleapis.com/oauth2/v3/certs"
        )
        let anonymousSection = section.section("anonymous")
        anonymous = Anonymous(enabled: anonymousSection.bool("enabled", default: false))
        anonymousSection.finish()
        var oidc: [IDTokenProvider] = []
        for item in section.sections("oidc") {
            let name = item.string("name", default: "")
            if name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
                item.report("name", "\"\(name)\" must be letters, digits, - or _")
            } else if ["apple", "google", "anonymous", "email", "phone"].contains(name.lowercased()) {
                item.report("name", "\"\(name)\" is reserved for a built-in provider")
            } else if oidc.contains(where: { $0.name == name }) {
                item.report("name", "\"\(name)\" is used by another OIDC provider")
            }
            let issuer = item.string("issuer", default: "")
            if !ConfigurationValueParsers.isFetchableURL(issuer) {
                item.report("issuer", "must be the issuer URL exactly as tokens carry it in iss; it " + ConfigurationValueParsers.fetchableURLRule)
            }
            oidc.append(Self.provider(item, name: name, issuers: [issuer], defaultJWKS: nil, enabledByDefault: true))
        }
        self.oidc = oidc
        tokenEncryptionKey = nil
        if let text = SecretReader().secret(in: section, key: "token_encryption_key") {
            if let key = ProviderTokenSealer.key(fromText: text) {
                tokenEncryptionKey = key
            } else {
                section.report("token_encryption_key_file", "must hold 32 random bytes in base64 (openssl rand -base64 32)")
            }
        } else if appleServer != nil {
            section.report(
                "token_encryption_key_file",
                "set it with providers.apple's team_id, key_id and private_key_file: Apple's refresh tokens are kept sealed under it")
        }
        section.finish()
    }

    private static func provider(
        _ section: ConfigurationSection,
        name: String,
        issuers: [String],
        defaultJWKS: String?,
        enabledByDefault: Bool = false
    ) -> IDTokenProvider {
        let enabled = section.bool("enabled", default: enabledByDefault)
        let audiences = section.stringList("audiences")
        if enabled, audiences.isEmpty {
            section.report("audiences", "list at least one accepted audience (bundle id, service id or client id) for \(name)")
        }
        let url = section.optionalString("jwks_url")
        let file = section.optionalString("jwks_file")
        var keySource: KeySource
        switch (url, file) {
        case (.some, .some):
            section.report("jwks_file", "set jwks_url or jwks_file, not both")
            keySource = .file(file ?? "")
        case (.some(let url), .none):
            if !ConfigurationValueParsers.isFetchableURL(url) {
                section.report("jwks_url", ConfigurationValueParsers.fetchableURLRule)
            }
            keySource = .url(url)
        case (.none, .some(let file)):
            keySource = .file(SecretReader.resolve(file, against: section.baseDirectory))
        case (.none, .none):
            keySource = defaultJWKS.map { .url($0) } ?? .discovery
        }
        let provider = IDTokenProvider(
            name: name,
            enabled: enabled,
            issuers: issuers,
            audiences: audiences,
            keySource: keySource,
            algorithm: section.choice("algorithm", default: .rs256),
            skipNonceCheck: section.bool("skip_nonce_check", default: false),
            requireServerNonce: section.bool("require_server_nonce", default: false),
            leeway: section.duration("leeway", default: .zero, maximum: .seconds(600)),
            clockSkew: section.duration("clock_skew", default: .seconds(60), maximum: .seconds(600))
        )
        if provider.skipNonceCheck, provider.requireServerNonce {
            section.report("require_server_nonce", "cannot be combined with skip_nonce_check")
        }
        section.finish()
        return provider
    }
}
