/// The one error type of AuthGateCore, with stable codes (like jwt-kit's `JWTError`): callers
/// switch on ``code``; codes are never renamed and new ones may be added.
///
/// ``message`` is for operators and logs. It never reaches a client: the HTTP layer maps codes to
/// GoTrue's client-facing texts, from a fixed table, or from ``clientText`` where GoTrue's text for
/// the case differs (built only by ``ClientText``'s named constructors, never from a message).
public struct AuthGateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let base: String
        private init(_ base: String) { self.base = base }

        /// The store cannot be reached or did not answer in time.
        public static let storeUnavailable = Code("store_unavailable")
        /// The store holds data that does not fit the key model (a bug or tampering).
        public static let storeCorrupt = Code("store_corrupt")
        /// A signing key file is missing or unreadable.
        public static let keyUnreadable = Code("key_unreadable")
        /// A signing key file does not hold a usable private key of the configured algorithm.
        public static let keyInvalid = Code("key_invalid")
        /// The set of signing keys breaks a rule (not exactly one active key, production without keys).
        public static let keySetInvalid = Code("key_set_invalid")
        /// A call to Apple's REST API names a client id that is not one of the Apple provider's
        /// audiences, so no client secret is minted for it.
        public static let appleClientUnknown = Code("apple_client_unknown")
        /// A provider's REST API refused a call for good: an authorization code expired or used,
        /// a token already revoked, an ID token for another subject (Apple's `invalid_grant`).
        public static let providerRejected = Code("provider_rejected")
        /// A provider's REST API refused our credentials (`invalid_client`): a configuration
        /// problem, not the user's; calls are retried once it is fixed.
        public static let providerCredentialsRejected = Code("provider_credentials_rejected")
        /// A provider's REST API could not be reached, timed out, or answered 5xx or 429.
        public static let providerUnavailable = Code("provider_unavailable")
        /// A provider token the caller asked to keep cannot be, because a setting it needs is
        /// missing (Apple's REST API credentials, the token encryption key).
        public static let providerAPINotConfigured = Code("provider_api_not_configured")

        // Reasons a provider ID token is rejected (logged and counted; never shown as-is to clients).

        /// The token is not a well-formed compact JWS with JSON header and payload.
        public static let malformed = Code("malformed")
        /// The header's `alg` is not the one configured for the provider (`none` and HMAC included).
        public static let algorithmNotAllowed = Code("algorithm_not_allowed")
        /// The header has no `kid`.
        public static let missingKeyID = Code("missing_kid")
        /// No key with the token's `kid` is in the provider's key set, even after a refetch.
        public static let unknownKeyID = Code("unknown_kid")
        /// The provider's key set could not be loaded at all (fail closed).
        public static let keysUnavailable = Code("keys_unavailable")
        /// The signature does not verify with the key named by `kid`.
        public static let badSignature = Code("bad_signature")
        /// `iss` is not an issuer of this provider.
        public static let issuer = Code("issuer")
        /// `aud` names none of the configured audiences.
        public static let audience = Code("audience")
        /// `exp` has passed (or is missing).
        public static let expired = Code("expired")
        /// `nbf` is in the future beyond the leeway.
        public static let notYetValid = Code("not_yet_valid")
        /// `iat` is in the future beyond the leeway.
        public static let issuedInFuture = Code("issued_in_future")
        /// `sub` is missing or empty.
        public static let missingSubject = Code("missing_subject")
        /// Exactly one of the request nonce and the token's nonce claim is present.
        public static let nonceMissing = Code("nonce_missing")
        /// The SHA-256 of the request nonce differs from the token's nonce claim.
        public static let nonceMismatch = Code("nonce_mismatch")
        /// The ID token's `at_hash` is not the hash of the access token sent with it.
        public static let accessTokenMismatch = Code("access_token_mismatch")
        /// The ID token was already used.
        public static let replayed = Code("replayed")
        /// A server-issued nonce was required and this one was never issued, has expired or was used.
        public static let serverNonceUnknown = Code("server_nonce_unknown")
        /// The provider is configured but not enabled.
        public static let providerDisabled = Code("provider_disabled")
        /// No provider has this name.
        public static let unknownProvider = Code("unknown_provider")

        // Account and session outcomes. Their strings are GoTrue's error codes, which the HTTP
        // layer sends to clients as they are.

        /// The body or a field is not acceptable.
        public static let validationFailed = Code("validation_failed")
        /// The bearer token does not verify.
        public static let badJWT = Code("bad_jwt")
        /// No bearer token was sent where one is required.
        public static let noAuthorization = Code("no_authorization")
        /// The token's user does not exist.
        public static let userNotFound = Code("user_not_found")
        /// The token's session does not exist (logged out or revoked).
        public static let sessionNotFound = Code("session_not_found")
        /// The session passed its timebox or inactivity limit.
        public static let sessionExpired = Code("session_expired")
        /// The user is banned.
        public static let userBanned = Code("user_banned")
        /// The refresh token is unknown.
        public static let refreshTokenNotFound = Code("refresh_token_not_found")
        /// The refresh token was reused outside the allowed window; its session was revoked.
        public static let refreshTokenAlreadyUsed = Code("refresh_token_already_used")
        /// The identity belongs to a user already.
        public static let identityAlreadyExists = Code("identity_already_exists")
        /// The email belongs to another user.
        public static let emailExists = Code("email_exists")
        /// Linking needs a verified email and the provider's is not.
        public static let emailNotConfirmed = Code("email_not_confirmed")
        /// Anonymous sign-ins are disabled.
        public static let anonymousProviderDisabled = Code("anonymous_provider_disabled")
        /// A sign-in or sign-up would create a user while `users.disable_signup` is on (GoTrue's
        /// `GOTRUE_DISABLE_SIGNUP`): existing users still sign in.
        public static let signupDisabled = Code("signup_disabled")
        /// Only admins may do this.
        public static let notAdmin = Code("not_admin")
        /// The identity named does not exist or is not the caller's (GoTrue's `identity_not_found`).
        public static let identityNotFound = Code("identity_not_found")
        /// Unlinking would leave the user without an identity (GoTrue's `single_identity_not_deletable`).
        public static let singleIdentityNotDeletable = Code("single_identity_not_deletable")
        /// Unlinking would move the user's email to one another user holds
        /// (GoTrue's `email_conflict_identity_not_deletable`).
        public static let emailConflictIdentityNotDeletable = Code("email_conflict_identity_not_deletable")
        /// The caller's sign-in is too old for this action (deleting the account): sign in again.
        public static let reauthenticationNeeded = Code("reauthentication_needed")

        /// A browser flow's authorization code is unknown, not yet signed in, or already exchanged
        /// (GoTrue's `flow_state_not_found`).
        public static let flowStateNotFound = Code("flow_state_not_found")
        /// A browser flow's authorization code is older than the flow's lifetime.
        public static let flowStateExpired = Code("flow_state_expired")
        /// The PKCE verifier does not answer the flow's challenge (GoTrue's `bad_code_verifier`).
        public static let badCodeVerifier = Code("bad_code_verifier")

        public var description: String { base }
    }

    public let code: Code
    public let message: String
    /// GoTrue's text for this case when the table's text for ``code`` does not fit it.
    public let clientText: ClientText?

    public init(_ code: Code, _ message: String, clientText: ClientText? = nil) {
        self.code = code
        self.message = message
        self.clientText = clientText
    }

    public var description: String { "\(code): \(message)" }
}

/// A client-facing error text, made only from constants or from values GoTrue itself puts in its
/// text (bounded and printable): the one way a text other than the table's reaches a client.
public struct ClientText: Sendable, Hashable {
    public let text: String

    private init(_ text: String) {
        self.text = text
    }

    /// A constant text.
    public static func fixed(_ text: StaticString) -> ClientText {
        ClientText(text.description)
    }

    /// GoTrue's "Unacceptable audience in id_token: [a b]", with the token's (signed) audiences,
    /// at most five, each printable and bounded.
    public static func unacceptableAudience(_ audiences: [String]) -> ClientText {
        ClientText("Unacceptable audience in id_token: [\(audiences.prefix(5).map(ProviderKeySet.printable).joined(separator: " "))]")
    }

    /// GoTrue's `Custom OIDC provider "<provider>" not allowed` for an id_token grant's `provider`
    /// that names no configured provider: the client's own text, quoted as Go's `%q` quotes it (ASCII
    /// outside printable ranges escaped), its first 64 characters.
    public static func customProviderNotAllowed(_ provider: String) -> ClientText {
        ClientText("Custom OIDC provider \(quotedClientValue(provider)) not allowed")
    }

    /// GoTrue's `Unsupported logout scope "<scope>"`, the client's scope quoted as Go's `%q` quotes
    /// it, its first 64 characters.
    public static func unsupportedLogoutScope(_ scope: String) -> ClientText {
        ClientText("Unsupported logout scope \(quotedClientValue(scope))")
    }

    /// GoTrue's `Provider (issuer "<issuer>") is not enabled`; `issuer` is a configured issuer.
    public static func providerNotEnabled(issuer: String) -> ClientText {
        ClientText("Provider (issuer \(goQuoted(issuer))) is not enabled")
    }

    /// A client's own value as GoTrue's texts show it: its first 64 characters, ``goQuoted(_:)``.
    private static func quotedClientValue(_ value: String) -> String {
        goQuoted(String(value.unicodeScalars.prefix(64)))
    }

    /// `text` in double quotes, as Go's `strconv.Quote` writes printable ASCII: `"` and `\` escaped,
    /// `\a`, `\b`, `\t`, `\n`, `\v`, `\f`, `\r` for their control bytes, the others as `\xNN`, and
    /// anything beyond ASCII as `\uNNNN` or `\UNNNNNNNN` (Go keeps printable Unicode as it is; here
    /// a client's text reaches a client only as ASCII).
    static func goQuoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\t": quoted += "\\t"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\u{07}": quoted += "\\a"
            case "\u{08}": quoted += "\\b"
            case "\u{0B}": quoted += "\\v"
            case "\u{0C}": quoted += "\\f"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: quoted += "\\x" + hex(scalar.value, digits: 2)
            case _ where scalar.value > 0xFFFF: quoted += "\\U" + hex(scalar.value, digits: 8)
            case _ where scalar.value > 0x7F: quoted += "\\u" + hex(scalar.value, digits: 4)
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// GoTrue's text for linking an identity whose email the provider did not verify; `provider`
    /// is a configured provider's name.
    public static func unverifiedEmail(provider: String) -> ClientText {
        let name = ProviderKeySet.printable(provider)
        return ClientText("Unverified email with \(name). A confirmation email has been sent to your \(name) email")
    }
}
