public import AsyncHTTPClient

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The browser flow's code exchange (`grant_type=authorization_code` with the `redirect_uri` the
/// browser was sent with) at Google's or Apple's token endpoint: Google's web client signs in with
/// its client secret, Apple's Services ID with a `client_secret` AuthGate mints
/// (``AppleClientSecretMinter``). No field value (the code, a token, the secret) is ever logged or
/// put in an error message.
public struct AuthorizationCodeClient: Sendable {
    /// What the provider's token endpoint answered.
    public struct Grant: Sendable {
        /// The provider's ID token (checked like any other before it is believed).
        public let idToken: String
        /// The provider's access token (GoTrue's `provider_token`), possibly empty.
        public let accessToken: String
        /// The provider's refresh token (GoTrue's `provider_refresh_token`), when it gave one.
        public let refreshToken: String?
    }

    private let post: ProviderFormPost
    private let appleSecrets: AppleClientSecretMinter?

    public init(http: HTTPClient, appleSecrets: AppleClientSecretMinter?, timeout: Duration = .seconds(10)) {
        self.post = ProviderFormPost(client: http, timeout: timeout)
        self.appleSecrets = appleSecrets
    }

    /// Exchanges `code` for `provider`'s tokens at `tokenURL`.
    /// - Throws: ``AuthGateError``: `providerRejected` (a used, expired or foreign code; an answer
    ///   without an ID token), `providerCredentialsRejected`, `providerUnavailable`,
    ///   `providerAPINotConfigured`.
    public func exchange(code: String, provider: BrowserFlowConfiguration.Provider, tokenURL: String, redirectURI: String, now: Date)
        async throws -> Grant
    {
        guard !code.isEmpty, code.utf8.count <= 2048, code.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw AuthGateError(.providerRejected, "\(provider.name) code: not a printable code")
        }
        let secret: String
        if let configured = provider.clientSecret {
            secret = configured
        } else if let appleSecrets {
            secret = try appleSecrets.clientSecret(for: provider.clientID, now: now).value
        } else {
            throw AuthGateError(.providerAPINotConfigured, "\(provider.name) code exchange: no client secret")
        }
        let what = "\(provider.name) code exchange"
        let answer = try await post.post(
            tokenURL,
            fields: [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("client_id", provider.clientID),
                ("client_secret", secret)
            ],
            what: what)
        do {
            try answer.requireSuccess(what)
            GatewayMetrics.providerCodeExchange(provider: provider.name, outcome: "ok")
        } catch let error as AuthGateError {
            GatewayMetrics.providerCodeExchange(provider: provider.name, outcome: error.code.description)
            throw error
        }
        let tokens = try answer.tokens(what)
        guard let idToken = tokens.idToken else { throw AuthGateError(.providerRejected, "\(what): the answer has no id_token") }
        return Grant(idToken: idToken, accessToken: tokens.accessToken ?? "", refreshToken: tokens.refreshToken)
    }
}
