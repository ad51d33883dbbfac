/// Who waits for replicas, in rounds (group commit): each round is one marker write and one
/// `WAIT` on the acknowledging connection, and answers every writer that was queued when it
/// started. At most one round is in flight; writers arriving meanwhile wait for the next one,
/// which starts as soon as it ends. A value type, tested without sockets.
struct ReplicaAcknowledgementRounds<Waiter> {
    /// Queued writers, by the marker key their round writes (a round writes one key).
    private var queued: [(markerKey: String, waiter: Waiter)] = []
    /// A round is in flight, or about to start.
    private(set) var isRunning = false

    /// Queues `waiter`; true when the caller must start running rounds (none was running).
    mutating func enqueue(_ waiter: Waiter, markerKey: String) -> Bool {
        queued.append((markerKey, waiter))
        guard !isRunning else { return false }
        isRunning = true
        return true
    }

    /// The next round: every queued writer with the first one's marker key, in arrival order.
    /// Nil, and no longer running, when nobody waits.
    mutating func nextRound() -> (markerKey: String, waiters: [Waiter])? {
        guard let first = queued.first else {
            isRunning = false
            return nil
        }
        var round: [Waiter] = []
        var rest: [(markerKey: String, waiter: Waiter)] = []
        for entry in queued {
            if entry.markerKey == first.markerKey { round.append(entry.waiter) } else { rest.append(entry) }
        }
        queued = rest
        return (first.markerKey, round)
    }
}
