#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A session: one sign-in on one device, alive until logout, reuse detection, a timeout or an
/// operator ends it. Its id is the `session_id` claim, stable across refreshes.
public struct SessionRecord: Sendable, Codable, Hashable {
    public var id: String
    public var userID: String
    public var createdAt: Date
    public var refreshedAt: Date
    public var aal: String
    public var amr: [AccessTokenClaims.AuthenticationMethod]

    public init(id: String, userID: String, createdAt: Date, refreshedAt: Date, aal: String, amr: [AccessTokenClaims.AuthenticationMethod]) {
        self.id = id
        self.userID = userID
        self.createdAt = createdAt
        self.refreshedAt = refreshedAt
        self.aal = aal
        self.amr = amr
    }
}
