/// A caller proven by a valid access token whose user and session still exist.
public struct AuthenticatedUser: Sendable {
    public let claims: AccessTokenClaims
    public let user: UserRecord
}
