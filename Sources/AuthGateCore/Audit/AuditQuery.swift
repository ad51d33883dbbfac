import RedisBridge

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What to read of the audit trail: newest first, `limit` events, optionally one user's and
/// those at or after `since`, skipping `offset` (paging).
public struct AuditQuery: Sendable, Hashable {
    public var userID: String?
    public var since: Date?
    public var offset: Int
    public var limit: Int
    /// Only events stored after this stream id, oldest first (`authgate audit --follow`).
    public var after: String?

    /// How far back a filtered read looks at most (the trail is capped near 100,000 events).
    public static let scanLimit = 100_000

    public init(userID: String? = nil, since: Date? = nil, offset: Int = 0, limit: Int = 50, after: String? = nil) {
        self.userID = userID
        self.since = since
        self.offset = max(0, offset)
        self.limit = min(max(1, limit), 1000)
        self.after = after
    }

    /// `since` as an operator or the admin API gives it: whole Unix seconds, from 0 to the end of
    /// year 9999 (digits only); nil for anything else.
    public static func since(unixSeconds text: some StringProtocol) -> Date? {
        guard let seconds = DecimalInteger.parse(text, in: 0...253_402_300_799) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// A user id to filter on, in the one form events hold (a lower-case UUID, so `4F0C…` finds
    /// `4f0c…`'s events); nil when `text` is not a UUID.
    public static func userID(_ text: String) -> String? {
        UUIDBytes.canonical(text)
    }

    /// Whether `event` is one the query asks for.
    public func matches(_ event: AuditEvent) -> Bool {
        (userID == nil || event.userID == userID) && (since.map { event.at >= $0 } ?? true)
    }
}
