/// Errors about AuthGate's own signing keys, with stable codes.
public struct KeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let base: String
        private init(_ base: String) { self.base = base }

        /// A key file is missing or unreadable.
        public static let unreadable = Code("key_unreadable")
        /// A key file does not hold a usable private key of the configured algorithm.
        public static let invalidKey = Code("key_invalid")
        /// The set of keys breaks a rule (not exactly one active key, production without keys).
        public static let invalidKeySet = Code("key_set_invalid")

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
