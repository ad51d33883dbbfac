/// `users:`: what a user may store about themselves (and an admin about them).
public struct UsersConfiguration: Sendable {
    /// Largest `user_metadata`, serialized as JSON: every user writes their own (`PUT /user`,
    /// sign-up `data`), and it is copied into every access token the user gets.
    public var maxUserMetadata: Int
    /// Largest `app_metadata` an admin may set (`PUT /admin/users/{id}`); also in every token.
    public var maxAppMetadata: Int

    init(reading section: ConfigurationSection) {
        maxUserMetadata = section.byteSize("max_user_metadata", default: 16 << 10)
        maxAppMetadata = section.byteSize("max_app_metadata", default: 16 << 10)
        for (key, value) in [("max_user_metadata", maxUserMetadata), ("max_app_metadata", maxAppMetadata)] where value > 256 << 10 {
            section.report(key, "\(ConfigurationValueParsers.format(bytes: value)) is over 256KiB: metadata travels in every access token")
        }
        section.finish()
    }
}
