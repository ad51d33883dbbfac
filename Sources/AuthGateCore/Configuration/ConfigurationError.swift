/// Everything wrong with a configuration, found in one pass so an operator can fix it in one go.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// One problem: the key it is about (`server.port`, `routes[1].upstreams`) and what is wrong.
    public struct Issue: Sendable, Hashable, CustomStringConvertible {
        /// The offending key, as a dotted path.
        public let key: String
        /// What is wrong, quoting the offending value.
        public let message: String

        public init(key: String, message: String) {
            self.key = key
            self.message = message
        }

        public var description: String { "\(key): \(message)" }
    }

    /// The problems, in the order they were found.
    public let issues: [Issue]

    public init(issues: [Issue]) { self.issues = issues }

    /// A single-problem error (for a missing file or YAML that does not parse).
    public init(key: String, message: String) { self.issues = [Issue(key: key, message: message)] }

    public var description: String {
        "invalid configuration:\n" + issues.map { "  - \($0)" }.joined(separator: "\n")
    }
}
