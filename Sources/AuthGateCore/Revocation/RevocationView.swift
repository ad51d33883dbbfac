import Synchronization

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What this replica knows about revoked sessions and users: kept in memory for as long as an
/// access token can live, so the proxy checks revocation with no Redis round trip.
///
/// Fed by ``RevocationFeed`` (the Redis stream every replica tails) or, with the memory store, in
/// process. ``isRevoked(sessionID:userID:issuedAt:)`` answers from memory; ``staleness(now:)``
/// tells the caller whether that memory can be trusted.
public final class RevocationView: Sendable {
    private struct State {
        /// Session id → when the entry may be forgotten.
        var sessions: [String: Date] = [:]
        /// User id → tokens issued before this are void, and when the entry may be forgotten.
        var users: [String: (before: Date, forgetAt: Date)] = [:]
        var lastContact: Date?
        var appliedSinceSweep = 0
    }

    private let state = Mutex(State())
    /// How long an entry is kept: the access-token lifetime plus a margin.
    public let retention: Duration

    public init(retention: Duration) {
        self.retention = retention
    }

    /// How long a revocation matters: as long as a token issued just before it can live, plus a
    /// minute for clocks that differ between replicas.
    public static func retention(accessTokenTTL: Duration) -> Duration {
        accessTokenTTL + .seconds(60)
    }

    /// Applies an event from the stream.
    public func apply(_ event: RevocationEvent) {
        let forgetAt = event.at.addingTimeInterval(retention.inSeconds)
        state.withLock { state in
            switch event.kind {
            case .session:
                if let sessionID = event.sessionID { state.sessions[sessionID] = forgetAt }
            case .user:
                let previous = state.users[event.userID]?.before ?? .distantPast
                state.users[event.userID] = (max(previous, event.at), forgetAt)
            }
            state.appliedSinceSweep += 1
            if state.appliedSinceSweep >= 4096 {
                state.appliedSinceSweep = 0
                let now = Date()
                state.sessions = state.sessions.filter { $0.value > now }
                state.users = state.users.filter { $0.value.forgetAt > now }
            }
        }
    }

    /// Records that the feed is up to date as of `date` (the stream reader heard from Redis).
    public func markCurrent(at date: Date) {
        state.withLock { $0.lastContact = date }
    }

    /// How far behind the view may be: time since the feed last heard from its source; nil when
    /// it never has.
    public func staleness(now: Date) -> TimeInterval? {
        state.withLock { $0.lastContact.map { now.timeIntervalSince($0) } }
    }

    /// True when the session was revoked, or the user's tokens issued at or before `issuedAt`
    /// (seconds) were voided (sign out everywhere, ban).
    public func isRevoked(sessionID: String?, userID: String, issuedAt: Int64) -> Bool {
        state.withLock { state in
            if let sessionID, state.sessions[sessionID] != nil { return true }
            if let user = state.users[userID], Double(issuedAt) <= user.before.timeIntervalSince1970 { return true }
            return false
        }
    }
}
