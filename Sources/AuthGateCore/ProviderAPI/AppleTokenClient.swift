public import AsyncHTTPClient

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Apple's REST API for a client id: exchanging an app's authorization code for Apple's refresh
/// token (`/auth/token`, `grant_type=authorization_code`) and revoking that token
/// (`/auth/revoke`), each call with a `client_secret` minted by ``AppleClientSecretMinter``
/// (`../shared/docs/apple-server-api.md` §2, §3).
public struct AppleTokenClient: Sendable {
    /// What a code exchange gives: Apple's refresh token and the subject of the ID token that
    /// came with it.
    public struct Grant: Sendable {
        public let refreshToken: String
        public let subject: String
    }

    private let secrets: AppleClientSecretMinter
    private let apiURL: String
    private let post: ProviderFormPost

    /// The issuer of the ID tokens Apple's token endpoint returns.
    static let issuer = "https://appleid.apple.com"

    public init(http: HTTPClient, secrets: AppleClientSecretMinter, apiURL: String, timeout: Duration = .seconds(10)) {
        self.secrets = secrets
        self.apiURL = apiURL
        self.post = ProviderFormPost(client: http, timeout: timeout)
    }

    /// Exchanges a native app's authorization code (single use, five minutes) for Apple's refresh
    /// token. The ID token in the answer must be for `clientID`; its subject is returned for the
    /// caller to compare with the identity it means.
    ///
    /// The ID token is not signature-checked: it comes straight from Apple's token endpoint over a
    /// verified TLS connection (OpenID Connect Core §3.1.3.7), not from a client.
    /// - Throws: ``AuthGateError``: `providerRejected` (code expired or used: Apple's
    ///   `invalid_grant`; or an answer without a refresh token or ID token for this client),
    ///   `providerCredentialsRejected`, `providerUnavailable`, `appleClientUnknown`.
    public func exchange(code: String, clientID: String, now: Date = Date()) async throws -> Grant {
        let secret = try secrets.clientSecret(for: clientID, now: now)
        let answer = try await post.post(
            apiURL + "/auth/token",
            fields: [("client_id", clientID), ("client_secret", secret.value), ("code", code), ("grant_type", "authorization_code")],
            what: "apple token")
        try answer.requireSuccess("apple token")
        let tokens = try answer.tokens("apple token")
        guard let refreshToken = tokens.refreshToken, let idToken = tokens.idToken else {
            throw AuthGateError(.providerRejected, "apple token: the answer has no refresh_token and id_token")
        }
        let claims: [String: JSONValue]
        do {
            claims = try CompactJWT(parsing: idToken).verifiedClaims()
        } catch {
            throw AuthGateError(.providerRejected, "apple token: the id_token does not parse")
        }
        guard let issuer = claims["iss"]?.stringValue, ByteExactString(issuer) == ByteExactString(Self.issuer),
            IDTokenCheck.audiences(in: claims).contains(where: { ByteExactString($0) == ByteExactString(clientID) }),
            let subject = claims["sub"]?.stringValue,
            !subject.isEmpty
        else {
            throw AuthGateError(.providerRejected, "apple token: the id_token is not Apple's for \(clientID)")
        }
        return Grant(refreshToken: refreshToken, subject: subject)
    }

    /// Revokes Apple's refresh token for `clientID`.
    /// - Throws: ``AuthGateError``: `providerRejected` (permanent), `providerCredentialsRejected`
    ///   and `providerUnavailable` (worth retrying), `appleClientUnknown`.
    public func revoke(refreshToken: String, clientID: String, now: Date = Date()) async throws -> ProviderRevocation.Result {
        let secret = try secrets.clientSecret(for: clientID, now: now)
        let answer = try await post.post(
            apiURL + "/auth/revoke",
            fields: [("client_id", clientID), ("client_secret", secret.value), ("token", refreshToken), ("token_type_hint", "refresh_token")],
            what: "apple revoke")
        if answer.status == 400, answer.errorCode == "invalid_grant" { return .alreadyInvalid }
        try answer.requireSuccess("apple revoke")
        return .revoked
    }
}
