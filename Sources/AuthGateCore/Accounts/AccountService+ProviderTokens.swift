#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Provider refresh tokens handed over after sign-in: for apps whose client cannot add a field to
/// the id_token grant (supabase-swift), `POST /auth/v1/user/apple/authorization_code`.
extension AccountService {
    /// Exchanges an Apple authorization code for the caller's Apple identity and stores Apple's
    /// refresh token on it, sealed, by compare-and-set (a deletion or an unlinking that landed
    /// meanwhile is not undone).
    /// - Parameter clientID: the client id the code was issued to; nil for the Apple provider's
    ///   first audience (the app's bundle id, as configured first).
    /// - Returns: the updated identity.
    /// - Throws: ``AuthGateError``: `identityNotFound` when the caller has no Apple identity,
    ///   the exchange's errors (``AppleRefreshTokens/sealedRefreshToken(code:clientID:subject:now:)``),
    ///   `providerAPINotConfigured`.
    public func keepAppleRefreshToken(for caller: AuthenticatedUser, code: String, clientID: String?, now: Date) async throws -> IdentityRecord {
        let now = now.atStoredMillisecond
        guard let appleRefreshTokens else {
            throw AuthGateError(.providerAPINotConfigured, "providers.apple needs team_id, key_id, private_key_file and a token encryption key")
        }
        guard let identity = caller.account.identities.first(where: { $0.provider == "apple" }) else {
            throw AuthGateError(.identityNotFound, "the user has no Apple identity")
        }
        let client = clientID ?? appleRefreshTokens.defaultClientID
        let sealed = try await appleRefreshTokens.sealedRefreshToken(code: code, clientID: client, subject: identity.subject, now: now)
        var saved: IdentityRecord?
        let updated = try await store.updateAccount(userID: caller.user.id, sessionID: caller.claims.sessionID, startingFrom: caller.account) {
            account in
            guard var record = account.identities.first(where: { $0.key == identity.key }) else {
                throw AuthGateError(.identityNotFound, "the Apple identity was removed meanwhile")
            }
            record.sealedRefreshToken = sealed
            record.refreshTokenClientID = client
            record.updatedAt = now
            saved = record
            var change = AccountChange(base: account.stamp, user: account.user)
            change.savedIdentities = [record]
            change.claimedIdentities = [record.key]
            return change
        }
        guard updated != nil, let saved else { throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist") }
        return saved
    }
}
