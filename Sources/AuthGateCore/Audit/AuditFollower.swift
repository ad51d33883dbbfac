/// Follows the audit trail from a position (`authgate audit --follow`): each ``next(from:)``
/// returns the events written since, oldest first, that the query matches, and moves past every
/// event it read, matched or not. A follower of one user's events therefore reads each entry of
/// the trail once, instead of every entry since that user's last event on every poll.
public struct AuditFollower: Sendable {
    /// Events read from the store per call.
    public static let batchSize = 1000

    /// Which events are returned (its `after`, `offset` and `limit` are not used).
    public let query: AuditQuery
    /// The id of the newest event read so far: the next call reads after it.
    public private(set) var position: String
    /// Whether the last call read a full batch (more may be waiting: call again at once).
    public private(set) var readFullBatch = false

    /// A follower of `query` that starts after the event with id `position`.
    public init(query: AuditQuery, from position: String) {
        self.query = query
        self.position = position
    }

    /// The matching events written after ``position``, oldest first.
    public mutating func next(from store: any AuthStore) async throws -> [AuditEvent] {
        let batch = try await store.auditEvents(AuditQuery(limit: Self.batchSize, after: position))
        if let newest = batch.last?.id { position = newest }
        readFullBatch = batch.count == Self.batchSize
        return batch.filter(query.matches)
    }
}
