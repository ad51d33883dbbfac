#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What every successful grant returns: GoTrue's token response, before serialisation.
public struct IssuedSession: Sendable {
    public let accessToken: String
    public let expiresIn: Int64
    public let expiresAt: Int64
    public let refreshToken: String
    public let user: UserRecord
    public let identities: [IdentityRecord]
    public let session: SessionRecord
}
