/// `users:`: what a user may store about themselves (and an admin about them).
public struct UsersConfiguration: Sendable {
    /// Largest `user_metadata`, serialized as JSON: every user writes their own (`PUT /user`,
    /// sign-up `data`), and it is copied into every access token the user gets.
    public var maxUserMetadata: Int
    /// Largest `app_metadata` an admin may set (`PUT /admin/users/{id}`); also in every token.
    public var maxAppMetadata: Int
    /// No new users (GoTrue's `GOTRUE_DISABLE_SIGNUP`): a sign-in that would create one, and
    /// anonymous sign-up, are refused with 422 `signup_disabled`; existing users sign in, link
    /// and refresh as before, and a verified email still links a new identity to its user.
    public var disableSignup: Bool
    /// `DELETE /auth/v1/user`: whether users may delete their own account (off by default).
    public var allowSelfDelete: Bool
    /// What a self-deletion (and Apple's `account-delete` notification) does to the user record.
    public var selfDelete: SelfDeleteMode
    /// How recent the caller's sign-in must be for `DELETE /auth/v1/user` (10 minutes).
    public var selfDeleteMaxAuthAge: Duration

    /// `users.self_delete`.
    public enum SelfDeleteMode: String, Sendable, CaseIterable {
        /// Everything is removed.
        case hard
        /// A scrubbed record stays (email, phone and identities removed, sign-in refused for
        /// good), as the admin API's soft delete.
        case soft
    }

    init(reading section: ConfigurationSection) {
        maxUserMetadata = section.byteSize("max_user_metadata", default: 16 << 10)
        maxAppMetadata = section.byteSize("max_app_metadata", default: 16 << 10)
        disableSignup = section.bool("disable_signup", default: false)
        allowSelfDelete = section.bool("allow_self_delete", default: false)
        selfDelete = section.choice("self_delete", default: .hard)
        selfDeleteMaxAuthAge = section.duration("self_delete_max_auth_age", default: .seconds(600), minimum: .seconds(10), maximum: .seconds(86_400))
        for (key, value) in [("max_user_metadata", maxUserMetadata), ("max_app_metadata", maxAppMetadata)] where value > 256 << 10 {
            section.report(key, "\(ConfigurationValueParsers.format(bytes: value)) is over 256KiB: metadata travels in every access token")
        }
        section.finish()
    }
}
