public import AsyncHTTPClient

/// Google's token revocation endpoint (`POST https://oauth2.googleapis.com/revoke`, form field
/// `token`, no client authentication; `../shared/docs/apple-server-api.md` §8).
public struct GoogleTokenClient: Sendable {
    private let revocationURL: String
    private let post: ProviderFormPost

    public init(http: HTTPClient, revocationURL: String, timeout: Duration = .seconds(10)) {
        self.revocationURL = revocationURL
        self.post = ProviderFormPost(client: http, timeout: timeout)
    }

    /// Revokes a Google refresh token (and the access tokens made from it).
    /// - Returns: ``ProviderRevocation/Result/alreadyInvalid`` when Google answers
    ///   `invalid_token` or `invalid_grant`.
    /// - Throws: ``AuthGateError``: `providerRejected` (permanent), `providerUnavailable`.
    public func revoke(refreshToken: String) async throws -> ProviderRevocation.Result {
        let answer = try await post.post(revocationURL, fields: [("token", refreshToken)], what: "google revoke")
        if answer.status == 400, answer.errorCode == "invalid_token" || answer.errorCode == "invalid_grant" { return .alreadyInvalid }
        try answer.requireSuccess("google revoke")
        return .revoked
    }
}
