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
}
