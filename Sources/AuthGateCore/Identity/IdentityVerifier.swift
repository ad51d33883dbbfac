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
/// `nbf`/`iat`, `sub` and the nonce rule. It does **not** record the token as used: sign-in does
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

    /// Verifies `idToken` as of `now`.
    /// - Throws: ``AuthGateError`` whose code is the stable rejection reason.
    func verify(idToken: String, rawNonce: String?, now: Date) async throws -> VerifiedIdentity
}

extension IdentityVerifier {
    /// The provider name requests use.
    public var provider: String { configuration.name }
}
