/// Which configured provider an id_token grant names, by GoTrue's rules (`getProvider` in
/// `internal/api/token_oidc.go`): its `provider` field, or, with no `provider` but a `client_id`
/// and an `issuer`, the `issuer` (Apple's and Google's issuers, or an OpenID Connect issuer in the
/// configuration). The providers are tried in GoTrue's order (Apple, Google, then the OIDC list), a
/// provider matching by name or by issuer. An issuer nobody configured is refused: GoTrue's
/// deprecated arbitrary-issuer mode (`GOTRUE_EXTERNAL_ALLOWED_ID_TOKEN_ISSUERS`, whose audience is
/// the request's own `client_id`) has no counterpart here.
///
/// A value type over the configuration, decided without the token: the token's claims are read
/// only after its signature verifies, so what GoTrue checks on an Apple token's unverified `iss`
/// is checked on the verified one (its issuers in ``IDTokenCheck``, the request's `issuer` in
/// ``IDTokenSignInVerifier``).
public struct IDTokenProviderResolution: Sendable {
    private struct Entry: Sendable {
        let name: String
        let issuers: [String]
        let enabled: Bool
    }

    private let entries: [Entry]

    /// The providers of `configuration`, in GoTrue's order.
    public init(_ configuration: ProvidersConfiguration) {
        self.init([configuration.apple, configuration.google] + configuration.oidc)
    }

    /// The given providers, tried in this order.
    public init(_ providers: [ProvidersConfiguration.IDTokenProvider]) {
        entries = providers.map { Entry(name: $0.name, issuers: $0.issuers, enabled: $0.enabled) }
    }

    /// Whether `name` is a configured provider's name, enabled or not.
    public func isConfigured(_ name: String) -> Bool {
        entries.contains { ByteExactString($0.name) == ByteExactString(name) }
    }

    /// The name of the provider `provider` or `issuer` selects (either may be empty).
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/unknownProvider`` (GoTrue's
    ///   `Custom OIDC provider "<provider>" not allowed`) or
    ///   ``AuthGateError/Code/providerDisabled`` (`Provider (issuer "<issuer>") is not enabled`).
    public func provider(named provider: String, issuer: String) throws -> String {
        let matched = entries.first { entry in
            ByteExactString(entry.name) == ByteExactString(provider) || (!issuer.isEmpty && entry.issuers.containsBytes(of: issuer))
        }
        guard let matched else {
            throw AuthGateError(
                .unknownProvider, "no provider by the name or issuer the request gave", clientText: .customProviderNotAllowed(provider))
        }
        guard matched.enabled else {
            throw AuthGateError(
                .providerDisabled, "provider \(matched.name) is not enabled", clientText: .providerNotEnabled(issuer: matched.issuers.first ?? ""))
        }
        return matched.name
    }
}
