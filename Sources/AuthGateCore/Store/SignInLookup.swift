/// What a sign-in decides on, read in one store call: the owner of the identity and, if it has
/// one, the owner's account; otherwise the holder of the email (when one was given) and the
/// holder's account.
public struct SignInLookup: Sendable {
    public var identityOwner: String?
    public var emailHolder: String?
    /// The identity owner's account, or else the email holder's.
    public var account: AccountSnapshot?

    public init(identityOwner: String?, emailHolder: String?, account: AccountSnapshot?) {
        self.identityOwner = identityOwner
        self.emailHolder = emailHolder
        self.account = account
    }
}
