#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// How one provider's verified claims become an identity: the provider-specific part of ID-token
/// verification. Each provider is one small type conforming to this (``AppleClaims``,
/// ``GoogleClaims``, ``OIDCClaims``).
public protocol IdentityClaimsPolicy: Sendable {
    /// Whether the provider vouches for the token's email.
    static func isEmailVerified(_ claims: [String: JSONValue]) -> Bool
    /// Claims kept in `identity_data.custom_claims`.
    static var customClaimNames: [String] { get }
}

/// An ``IdentityVerifier`` for any provider: the shared checks of ``IDTokenCheck``, then the
/// provider's ``IdentityClaimsPolicy``.
public struct ProviderIDTokenVerifier<Policy: IdentityClaimsPolicy>: IdentityVerifier {
    public let configuration: ProvidersConfiguration.IDTokenProvider
    public let keySet: ProviderKeySet

    public init(configuration: ProvidersConfiguration.IDTokenProvider, keySet: ProviderKeySet) {
        self.configuration = configuration
        self.keySet = keySet
    }

    public func verify(idToken: String, rawNonce: String?, accessToken: String?, now: Date) async throws -> VerifiedIdentity {
        let verified = try await IDTokenCheck(configuration: configuration, keySet: keySet).run(
            idToken: idToken, rawNonce: rawNonce, accessToken: accessToken, now: now)
        return IdentityClaimsMapper.identity(
            provider: configuration.name,
            verified: verified,
            emailVerified: Policy.isEmailVerified(verified.claims),
            customClaimNames: Policy.customClaimNames
        )
    }
}
