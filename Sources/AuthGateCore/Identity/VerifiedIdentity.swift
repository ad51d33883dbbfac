#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Who a provider ID token proves the caller to be, after every check passed.
public struct VerifiedIdentity: Sendable, Hashable {
    /// The provider name (`apple`, `google`, an OIDC name).
    public let provider: String
    /// The token's `sub`: the user's id at the provider.
    public let subject: String
    /// Lower-cased email, if the token has one.
    public let email: String?
    /// Whether the provider vouches for the email (Apple: always, GoTrue's rule).
    public let emailVerified: Bool
    public var name: String?
    public let picture: String?
    /// The token's `iss`.
    public let issuer: String
    /// `exp` of the token: its replay record lives until then (plus leeway).
    public let expiresAt: Date
    /// `iat` of the token, if present.
    public let issuedAt: Date?
    /// Every claim of the token.
    public let claims: [String: JSONValue]
    /// GoTrue's `identity_data`: iss, sub, provider_id, email, email_verified, phone_verified,
    /// profile claims when present, and the provider's `custom_claims` (and, from Apple's browser
    /// flow, the name Apple sends once).
    public var identityData: [String: JSONValue]
    /// Lower-case hex SHA-256 of the whole token: its identity in the replay window.
    public let tokenHash: String
    /// The provider's refresh token obtained with this sign-in (Apple's, from the app's
    /// authorization code), sealed; stored on the identity by the sign-in's own write.
    public var sealedRefreshToken: String? = nil
    /// The client id that refresh token was issued to.
    public var refreshTokenClientID: String? = nil

    /// The token's audiences (`aud`, a string or a list).
    public var audiences: [String] { IDTokenCheck.audiences(in: claims) }
}
