#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// One refresh attempt as the store sees it: the presented token's hash, the child that replaces
/// it if it is current (hash, and sealed under the presented token), and the session rules.
public struct RefreshRotation: Sendable {
    public let userID: String
    public let sessionID: String
    public let presentedHash: String
    public let childHash: String
    /// The child sealed under the presented token (see ``RefreshToken``).
    public let sealedChild: String
    public let now: Date
    public let reuseInterval: Duration
    public let sessionTimebox: Duration
    public let inactivityTimeout: Duration
}

/// What the store did with a refresh attempt.
public enum RefreshRotationOutcome: Sendable, Hashable {
    /// The presented token was current: the child is now current.
    case rotated
    /// The presented token is the current token's parent, within the reuse interval: the current
    /// child, sealed under the presented token, is returned again (concurrent refreshes converge).
    case reusedWithinInterval(sealedCurrent: String)
    /// An older token, or the parent after the interval: the session was revoked.
    case reuseDetected
    /// Past `session_timebox`: the session was revoked.
    case expiredTimebox
    /// Unused longer than `inactivity_timeout`: the session was revoked.
    case expiredInactivity
    /// No such session, or a token this session never issued, or no such user.
    case notFound
    /// The user is banned or soft-deleted: nothing was rotated.
    case userBanned
}

extension RefreshRotationOutcome {
    /// The outcome's label in `authgate_refresh_total`.
    var metricName: String {
        switch self {
        case .rotated: "rotated"
        case .reusedWithinInterval: "reused_in_window"
        case .reuseDetected: "reuse_revoked"
        case .expiredTimebox, .expiredInactivity: "expired"
        case .notFound: "not_found"
        case .userBanned: "banned"
        }
    }
}
