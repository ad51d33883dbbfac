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
    /// The `User-Agent` of the request that started the session (printable, at most 512 bytes).
    public var userAgent: String?
    /// The client IP that started the session (through `server.trusted_proxies`).
    public var ip: String?

    public init(
        id: String, userID: String, createdAt: Date, refreshedAt: Date, aal: String, amr: [AccessTokenClaims.AuthenticationMethod],
        device: SessionDevice = .unknown
    ) {
        self.id = id
        self.userID = userID
        self.createdAt = createdAt
        self.refreshedAt = refreshedAt
        self.aal = aal
        self.amr = amr
        self.userAgent = device.userAgent
        self.ip = device.ip
    }
}
