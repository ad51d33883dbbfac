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
