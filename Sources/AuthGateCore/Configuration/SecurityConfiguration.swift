/// `security:`: GoTrue's security switches.
public struct SecurityConfiguration: Sendable {
    /// GoTrue's `GOTRUE_SECURITY_MANUAL_LINKING_ENABLED`: `DELETE /auth/v1/user/identities/{id}`
    /// (unlinking) answers 404 `manual_linking_disabled` without it.
    public var manualLinkingEnabled: Bool

    init(reading section: ConfigurationSection) {
        manualLinkingEnabled = section.bool("manual_linking_enabled", default: false)
        section.finish()
    }
}
