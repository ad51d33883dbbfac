#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Decides whether a provider's ID token proves who the caller is. One type per provider
/// (``AppleVerifier``, ``GoogleVerifier``, ``OIDCVerifier``); adding a provider is one file
/// conforming to this protocol and one configuration block.
///
/// `verify` checks signature (by `kid`, algorithm from configuration), issuer, audience, expiry,
/// `nbf`/`iat`, `at_hash` (when an access token comes with it), `sub` and the nonce rule. It does **not** record the token as used: sign-in does
/// that through ``ReplayGuard`` so that diagnostics (`authgate verify-id-token`) never consume a token.
///
/// ```swift
/// let identity = try await registry.verifier(for: "apple").verify(idToken: token, rawNonce: nonce, now: Date())
/// ```
public protocol IdentityVerifier: Sendable {
    /// The provider's configuration (name, issuers, audiences, algorithm, nonce options).
    var configuration: ProvidersConfiguration.IDTokenProvider { get }

    /// The provider's key set.
    var keySet: ProviderKeySet { get }

    /// Verifies `idToken` as of `now`; `accessToken`, the provider access token sent with it (if
    /// any), is checked against the token's `at_hash` (``AccessTokenHashRule``).
    /// - Throws: ``AuthGateError`` whose code is the stable rejection reason.
    func verify(idToken: String, rawNonce: String?, accessToken: String?, now: Date) async throws -> VerifiedIdentity
}

extension IdentityVerifier {
    /// Verifies `idToken` as of `now`, without an access token.
    public func verify(idToken: String, rawNonce: String?, now: Date) async throws -> VerifiedIdentity {
        try await verify(idToken: idToken, rawNonce: rawNonce, accessToken: nil, now: now)
    }

    /// The provider name requests use.
    public var provider: String { configuration.name }
}
