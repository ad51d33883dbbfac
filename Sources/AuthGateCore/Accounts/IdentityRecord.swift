#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A provider identity linked to a user, keyed by (provider, subject).
public struct IdentityRecord: Sendable, Codable, Hashable {
    /// The identity's own UUID (GoTrue's `identity_id`).
    public var identityID: String
    public var userID: String
    public var provider: String
    /// The provider's `sub` (GoTrue's identity `id`).
    public var subject: String
    public var identityData: [String: JSONValue]
    public var email: String?
    public var createdAt: Date
    public var updatedAt: Date
    public var lastSignInAt: Date?
    /// The provider's refresh token for this identity (Apple's, from a code exchange), sealed by
    /// ``ProviderTokenSealer``; revoked through the outbox when the identity leaves. Never sent to
    /// a client.
    public var sealedRefreshToken: String?
    /// The client id that refresh token was issued to (the bundle id or Services ID).
    public var refreshTokenClientID: String?

    public init(
        identityID: String, userID: String, provider: String, subject: String, identityData: [String: JSONValue],
        email: String?, createdAt: Date, updatedAt: Date, lastSignInAt: Date?, sealedRefreshToken: String? = nil,
        refreshTokenClientID: String? = nil
    ) {
        self.identityID = identityID
        self.userID = userID
        self.provider = provider
        self.subject = subject
        self.identityData = identityData
        self.email = email
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastSignInAt = lastSignInAt
        self.sealedRefreshToken = sealedRefreshToken
        self.refreshTokenClientID = refreshTokenClientID
    }
}
