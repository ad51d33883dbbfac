/// A provider identity's key: (provider, subject).
public struct IdentityKey: Sendable, Hashable {
    public var provider: String
    public var subject: String

    public init(provider: String, subject: String) {
        self.provider = provider
        self.subject = subject
    }

    /// The field naming the identity in its user's identity hash (`provider:subject`).
    var field: String { "\(provider):\(subject)" }

    /// Byte for byte, as Redis compares the identity's keys: Swift's `==` on strings would make a
    /// subject equal to its Unicode canonical equivalents (``ByteExactString``).
    public static func == (left: IdentityKey, right: IdentityKey) -> Bool {
        ByteExactString(left.provider) == ByteExactString(right.provider) && ByteExactString(left.subject) == ByteExactString(right.subject)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ByteExactString(provider))
        hasher.combine(ByteExactString(subject))
    }
}

extension IdentityRecord {
    /// The identity's key: provider and subject, compared byte for byte.
    public var key: IdentityKey { IdentityKey(provider: provider, subject: subject) }
}
