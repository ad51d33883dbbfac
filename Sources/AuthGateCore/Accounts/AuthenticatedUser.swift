/// A caller proven by a valid access token whose user and session still exist.
///
/// A class: the request context, the middleware and the handlers pass it along, and each copy of
/// a struct this size retained every string, dictionary and array inside it.
public final class AuthenticatedUser: Sendable {
    public let claims: AccessTokenClaims
    /// The account as read when the caller was authenticated; its stamp guards the request's
    /// writes (a change that landed since is never overwritten).
    public let account: AccountSnapshot
    /// The caller's user as read when it was authenticated.
    /// Inlinable, so a caller in another module that reads one field (`caller.user.id`) reads
    /// that field, not a copy of the whole record.
    @inlinable public var user: UserRecord { account.user }

    public init(claims: AccessTokenClaims, account: AccountSnapshot) {
        self.claims = claims
        self.account = account
    }
}
