/// Follows the audit trail from a position (`authgate audit --follow`): each ``next(from:)``
/// returns the events written since, oldest first, that the query matches, and moves past every
/// event it read, matched or not. A follower of one user's events therefore reads each entry of
/// the trail once, instead of every entry since that user's last event on every poll.
///
/// The trail keeps about the newest 100,000 events and drops the oldest first. A follower that
/// fell that far behind (an outage longer than the trail, a slow reader) would have skipped what
/// was dropped without a word: each call that starts after an event checks, once it has read,
/// that the event is still in the trail (then nothing after it was dropped), and otherwise says so
/// in ``droppedAfter``.
///
/// A call that fails (the store restarting, a failover) leaves the position where it was: the
/// caller waits ``delay``, which doubles with each failure in a row up to ``longestDelay``, and
/// calls again, so a follower that outlives an outage goes on from its last event, with no gap
/// and no event printed twice.
public struct AuditFollower: Sendable {
    /// Events read from the store per call.
    public static let batchSize = 1000
    /// The wait after a call that read less than a full batch.
    public static let pollInterval = Duration.milliseconds(500)
    /// The longest wait after failed calls.
    public static let longestDelay = Duration.seconds(5)

    /// Which events are returned (its `after`, `offset` and `limit` are not used).
    public let query: AuditQuery
    /// The id of the newest event read so far: the next call reads after it.
    public private(set) var position: String
    /// Whether the last call read a full batch (more may be waiting: call again at once).
    public private(set) var readFullBatch = false
    /// The position the last call started from, when that event had left the trail by the time
    /// it read: events after it may have been dropped before they were read. Nil otherwise.
    public private(set) var droppedAfter: String?
    /// Whether ``position`` is an event's id (rather than a starting point chosen by time).
    private var positionIsEvent: Bool
    /// How many calls in a row have failed (0 after one that succeeded).
    public private(set) var failures = 0
    /// How long to wait before the next call: none after a full batch, ``pollInterval`` after a
    /// shorter one, twice the last wait after a failure (at most ``longestDelay``).
    public private(set) var delay = Duration.zero

    /// A follower of `query` that starts after `position`: an event's id (`isEvent`), or a point
    /// in the trail that no event need have (`<milliseconds>-0`), which is not checked.
    public init(query: AuditQuery, from position: String, isEvent: Bool = false) {
        self.query = query
        self.position = position
        self.positionIsEvent = isEvent
    }

    /// The matching events written after ``position``, oldest first. When the store fails, the
    /// error is thrown and the position stays.
    public mutating func next(from store: any AuthStore) async throws -> [AuditEvent] {
        let batch: [AuditEvent]
        let startIsGone: Bool
        do {
            batch = try await store.auditEvents(AuditQuery(limit: Self.batchSize, after: position))
            // Asked after the read: still there, it was there when the read began, and nothing
            // after it had been dropped. Gone, the read may have missed some (or the drop came
            // just after it: told all the same, since the follower is then at the trail's edge).
            startIsGone = positionIsEvent ? !(try await store.auditEventExists(id: position)) : false
        } catch {
            failures += 1
            delay = min(max(delay * 2, Self.pollInterval), Self.longestDelay)
            throw error
        }
        failures = 0
        droppedAfter = startIsGone ? position : nil
        // Told once: from now on the position is only a point in the trail.
        if startIsGone { positionIsEvent = false }
        if let newest = batch.last?.id {
            position = newest
            positionIsEvent = true
        }
        readFullBatch = batch.count == Self.batchSize
        delay = readFullBatch ? .zero : Self.pollInterval
        return batch.filter(query.matches)
    }
}
