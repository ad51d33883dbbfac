/// Anonymous sign-in: no token to verify, only whether it is allowed.
public struct AnonymousProvider: Sendable {
    public let isEnabled: Bool

    public init(configuration: ProvidersConfiguration.Anonymous) {
        self.isEnabled = configuration.enabled
    }

    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/providerDisabled`` when anonymous sign-in is off.
    public func requireEnabled() throws {
        guard isEnabled else {
            throw AuthGateError(.providerDisabled, "anonymous sign-ins are disabled", clientText: .fixed("Anonymous sign-ins are disabled"))
        }
    }
}
