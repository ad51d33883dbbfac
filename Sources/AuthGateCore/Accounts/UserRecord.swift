#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A user as stored: what GoTrue's `users` row holds for the flows AuthGate serves.
public struct UserRecord: Sendable, Codable, Hashable {
    /// Lower-case UUID.
    public var id: String
    public var aud: String
    public var role: String
    /// Lower-cased; nil when the user has none.
    public var email: String?
    public var phone: String?
    public var emailConfirmedAt: Date?
    public var appMetadata: [String: JSONValue]
    public var userMetadata: [String: JSONValue]
    public var isAnonymous: Bool
    public var createdAt: Date
    public var updatedAt: Date
    public var lastSignInAt: Date?
    public var bannedUntil: Date?
    /// Set by a soft delete: the record stays (its id can still be found) but cannot sign in.
    public var deletedAt: Date?

    public init(
        id: String, aud: String, role: String, email: String?, phone: String?, emailConfirmedAt: Date?,
        appMetadata: [String: JSONValue], userMetadata: [String: JSONValue], isAnonymous: Bool,
        createdAt: Date, updatedAt: Date, lastSignInAt: Date?, bannedUntil: Date?, deletedAt: Date? = nil
    ) {
        self.id = id
        self.aud = aud
        self.role = role
        self.email = email
        self.phone = phone
        self.emailConfirmedAt = emailConfirmedAt
        self.appMetadata = appMetadata
        self.userMetadata = userMetadata
        self.isAnonymous = isAnonymous
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastSignInAt = lastSignInAt
        self.bannedUntil = bannedUntil
        self.deletedAt = deletedAt
    }

    /// True while a ban is in force (a soft-deleted user is banned for good).
    public func isBanned(at now: Date) -> Bool { deletedAt != nil || (bannedUntil.map { $0 > now } ?? false) }
}
