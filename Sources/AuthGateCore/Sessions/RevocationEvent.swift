#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// An entry of the revocation stream every replica tails: one session ended, or every session of
/// a user issued before a time.
public struct RevocationEvent: Sendable, Hashable {
    public enum Kind: String, Sendable {
        /// One session ended (logout, reuse detection, timeout, operator).
        case session
        /// Every token of the user issued before ``RevocationEvent/at`` is void (sign out
        /// everywhere, ban).
        case user
    }

    public let kind: Kind
    public let userID: String
    /// Set for ``Kind/session``.
    public let sessionID: String?
    /// Why: `logout`, `refresh_token_reuse`, `session_timebox`, `inactivity`, `admin`, `ban`.
    public let reason: String
    public let at: Date

    public init(kind: Kind, userID: String, sessionID: String?, reason: String, at: Date) {
        self.kind = kind
        self.userID = userID
        self.sessionID = sessionID
        self.reason = reason
        self.at = at
    }
}
