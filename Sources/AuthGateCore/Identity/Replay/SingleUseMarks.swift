#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What makes one sign-in's ID token single use, not yet taken: the token's replay record
/// (``ReplayGuard``) and the server-issued nonce to use up (``ServerNonceIssuer``, when the provider
/// requires one).
///
/// ``IDTokenSignInVerifier/check(provider:idToken:rawNonce:now:)`` makes them; either the store
/// takes them in the same atomic step as the sign-in's first read
/// (``AuthStore/signInLookup(provider:subject:email:taking:)``: one round trip instead of two), or
/// ``IDTokenSignInVerifier/take(_:)`` takes them alone. Taking them is the same in both: the
/// replay record first, then the nonce, each refused with the same error.
public struct SingleUseMarks: Sendable {
    /// A record kept until it expires.
    public struct Mark: Sendable, Equatable {
        /// The store's key (``AuthStore/insertIfAbsent(_:expiresAt:)``'s form, before the prefix).
        public let key: String
        public let expiresAt: Date
    }

    /// The provider whose token this is (for the refusal's message).
    public let provider: String
    /// Recorded unless already recorded (`SET NX`); nil when replay protection is off.
    public let replay: Mark?
    /// The key of the server-issued nonce to use up (`GETDEL`); nil unless the provider requires one.
    public let serverNonce: String?

    /// Why taking the marks failed.
    public enum Refusal: Sendable {
        /// The replay record was already there: the token was used before.
        case replayed
        /// The nonce was not issued here, has expired or was used.
        case serverNonceUnknown
    }

    /// The error a refusal is answered with, wherever the marks were taken.
    public func error(_ refusal: Refusal) -> AuthGateError {
        switch refusal {
        case .replayed: AuthGateError(.replayed, "this \(provider) ID token was already used")
        case .serverNonceUnknown: Self.serverNonceUnknown
        }
    }

    static let serverNonceUnknown = AuthGateError(
        .serverNonceUnknown, "the nonce was not issued by this gateway, has expired, or was already used")
}
