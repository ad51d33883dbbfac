/// Follows the audit trail from a position (`authgate audit --follow`): each ``next(from:)``
/// returns the events written since, oldest first, that the query matches, and moves past every
/// event it read, matched or not. A follower of one user's events therefore reads each entry of
/// the trail once, instead of every entry since that user's last event on every poll.
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
    /// How many calls in a row have failed (0 after one that succeeded).
    public private(set) var failures = 0
    /// How long to wait before the next call: none after a full batch, ``pollInterval`` after a
    /// shorter one, twice the last wait after a failure (at most ``longestDelay``).
    public private(set) var delay = Duration.zero

    /// A follower of `query` that starts after the event with id `position`.
    public init(query: AuditQuery, from position: String) {
        self.query = query
        self.position = position
    }

    /// The matching events written after ``position``, oldest first. When the store fails, the
    /// error is thrown and the position stays.
    public mutating func next(from store: any AuthStore) async throws -> [AuditEvent] {
        let batch: [AuditEvent]
        do {
            batch = try await store.auditEvents(AuditQuery(limit: Self.batchSize, after: position))
        } catch {
            failures += 1
            delay = min(max(delay * 2, Self.pollInterval), Self.longestDelay)
            throw error
        }
        failures = 0
        if let newest = batch.last?.id { position = newest }
        readFullBatch = batch.count == Self.batchSize
        delay = readFullBatch ? .zero : Self.pollInterval
        return batch.filter(query.matches)
    }
}
