#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What sign-in runs before any user is touched: the provider's checks, then single use (the
/// token, and the server-issued nonce when the provider requires one), taken alone or with the
/// sign-in's first read (``SingleUseMarks``).
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
        let (identity, marks) = try await check(provider: provider, idToken: idToken, rawNonce: rawNonce, now: now)
        try await take(marks)
        return identity
    }

    /// Verifies an ID token without using it up: the provider's checks (with `accessToken`, the
    /// provider access token the client sent beside it, against its `at_hash`), and what makes it
    /// single use, which the caller must take before it writes anything: with the sign-in's lookup
    /// (``AuthStore/signInLookup(provider:subject:email:taking:)``), or with ``take(_:)``.
    ///
    /// `issuer`, the grant's optional `issuer` field, must be the verified token's `iss` when the
    /// provider is Apple (GoTrue's "Provided issuer does not match ID token issuer"; Apple signs
    /// with either of its two issuers).
    /// - Throws: ``AuthGateError`` with the rejection reason as its code; a provider that requires
    ///   a server nonce and got none, or one this gateway never issues, is refused here.
    public func check(provider: String, idToken: String, rawNonce: String?, accessToken: String? = nil, issuer: String? = nil, now: Date)
        async throws -> (VerifiedIdentity, SingleUseMarks)
    {
        let verifier = try registry.verifier(for: provider)
        let identity = try await verifier.verify(idToken: idToken, rawNonce: rawNonce, accessToken: accessToken, now: now)
        if provider == "apple", let issuer, !issuer.isEmpty, ByteExactString(issuer) != ByteExactString(identity.issuer) {
            throw AuthGateError(
                .validationFailed, "the request's issuer is not the token's", clientText: .fixed("Provided issuer does not match ID token issuer"))
        }
        var serverNonce: String?
        if verifier.configuration.requireServerNonce {
            guard let rawNonce, let key = ServerNonceIssuer.storeKey(for: rawNonce) else { throw SingleUseMarks.serverNonceUnknown }
            serverNonce = key
        }
        return (identity, SingleUseMarks(provider: identity.provider, replay: replayGuard.mark(for: identity, now: now), serverNonce: serverNonce))
    }

    /// Verifies an ID token a provider's token endpoint returned to a browser flow, without using
    /// it up: the provider's checks (`at_hash` against the `accessToken` of the same answer); the
    /// flow's own nonce (sent hashed with the browser to the
    /// provider), always, whatever `skip_nonce_check` says; and its single-use mark (the nonce is
    /// the gateway's own, so no server nonce is asked for).
    /// - Throws: ``AuthGateError`` with the rejection reason as its code.
    public func checkBrowserFlow(provider: String, idToken: String, accessToken: String?, flowNonce: String, now: Date) async throws -> (
        VerifiedIdentity, SingleUseMarks
    ) {
        let verifier = try registry.verifier(for: provider)
        let identity = try await verifier.verify(idToken: idToken, rawNonce: flowNonce, accessToken: accessToken, now: now)
        if verifier.configuration.skipNonceCheck {
            try NonceRule.check(rawNonce: flowNonce, claim: identity.claims["nonce"]?.stringValue)
        }
        return (identity, SingleUseMarks(provider: identity.provider, replay: replayGuard.mark(for: identity, now: now), serverNonce: nil))
    }

    /// Takes the marks alone (one round trip each): the replay record, then the nonce.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/replayed`` or
    ///   ``AuthGateError/Code/serverNonceUnknown``.
    public func take(_ marks: SingleUseMarks) async throws {
        if let replay = marks.replay, try await !replayGuard.record(replay) {
            throw marks.error(.replayed)
        }
        if let serverNonce = marks.serverNonce, try await !nonces.consume(storeKey: serverNonce) {
            throw marks.error(.serverNonceUnknown)
        }
    }
}
