/// The error the stores throw, with stable codes (never renamed; new ones may be added).
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let base: String
        private init(_ base: String) { self.base = base }

        /// The backing store cannot be reached or did not answer in time.
        public static let unavailable = Code("store_unavailable")
        /// The store answered with data that does not fit the key model (a bug or tampering).
        public static let corrupt = Code("store_corrupt")

        public var description: String { base }
    }

    public let code: Code
    /// Details for logs; never shown to clients.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
