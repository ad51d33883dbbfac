#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What sign-in runs before any user is touched: the provider's checks, then single use (the
/// token, and the server-issued nonce when the provider requires one).
public struct IDTokenSignInVerifier: Sendable {
    public let registry: IdentityVerifierRegistry
    private let replayGuard: ReplayGuard
    private let nonces: ServerNonceIssuer

    public init(registry: IdentityVerifierRegistry, replayGuard: ReplayGuard, nonces: ServerNonceIssuer) {
        self.registry = registry
        self.replayGuard = replayGuard
        self.nonces = nonces
    }

    /// Verifies and consumes an ID token for sign-in.
    /// - Throws: ``AuthGateError`` with the rejection reason as its code.
    public func verify(provider: String, idToken: String, rawNonce: String?, now: Date) async throws -> VerifiedIdentity {
        let verifier = try registry.verifier(for: provider)
        let identity = try await verifier.verify(idToken: idToken, rawNonce: rawNonce, now: now)
        try await replayGuard.claim(identity, now: now)
        if verifier.configuration.requireServerNonce {
            guard let rawNonce, try await nonces.consume(rawNonce) else {
                throw AuthGateError(.serverNonceUnknown, "the nonce was not issued by this gateway, has expired, or was already used")
            }
        }
        return identity
    }
}
