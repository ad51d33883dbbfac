/// Revokes one outbox entry's token at its provider: opens the sealed token and calls Apple's or
/// Google's revocation endpoint. The one place that knows which provider revokes how, so the next
/// provider adds a case here and nothing else.
public struct ProviderTokenRevoker: Sendable {
    private let sealer: ProviderTokenSealer?
    private let apple: AppleTokenClient?
    private let google: GoogleTokenClient?

    public init(sealer: ProviderTokenSealer?, apple: AppleTokenClient?, google: GoogleTokenClient?) {
        self.sealer = sealer
        self.apple = apple
        self.google = google
    }

    /// Calls the entry's provider.
    /// - Throws: ``AuthGateError``: `providerUnavailable` and `providerCredentialsRejected` are
    ///   worth retrying; anything else is permanent (`providerRejected`, `storeCorrupt` for a token
    ///   that does not open, `providerAPINotConfigured`).
    public func revoke(_ entry: ProviderRevocation) async throws -> ProviderRevocation.Result {
        guard let sealer else {
            throw AuthGateError(.providerAPINotConfigured, "providers.token_encryption_key_file is not set; the sealed token cannot be opened")
        }
        let token = try sealer.open(entry.sealedToken, provider: entry.provider, subject: entry.subject)
        switch entry.provider {
        case "apple":
            guard let apple else {
                throw AuthGateError(.providerAPINotConfigured, "providers.apple has no team_id, key_id and private_key_file to call Apple with")
            }
            guard let clientID = entry.clientID else { throw AuthGateError(.storeCorrupt, "an Apple revocation without its client id") }
            return try await apple.revoke(refreshToken: token, clientID: clientID)
        case "google":
            guard let google else { throw AuthGateError(.providerAPINotConfigured, "no HTTP client for Google's revocation endpoint") }
            return try await google.revoke(refreshToken: token)
        default:
            throw AuthGateError(.providerAPINotConfigured, "no revocation endpoint is known for provider \(entry.provider)")
        }
    }
}
