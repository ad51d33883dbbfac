/// The one error type of AuthGateCore, with stable codes (like jwt-kit's `JWTError`): callers
/// switch on ``code``; codes are never renamed and new ones may be added.
///
/// ``message`` is for operators and logs. It never reaches a client: the HTTP layer maps codes to
/// GoTrue's client-facing texts.
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
        /// The ID token was already used.
        public static let replayed = Code("replayed")
        /// A server-issued nonce was required and this one was never issued, has expired or was used.
        public static let serverNonceUnknown = Code("server_nonce_unknown")
        /// The provider is configured but not enabled.
        public static let providerDisabled = Code("provider_disabled")
        /// No provider has this name.
        public static let unknownProvider = Code("unknown_provider")

        public var description: String { base }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
