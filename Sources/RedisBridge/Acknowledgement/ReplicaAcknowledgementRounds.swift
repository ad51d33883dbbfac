/// Who is waiting for replicas, in rounds (group commit): each round sends every queued writer's
/// script and one `WAIT` behind them, on the acknowledging connection. At most one round is in
/// flight; writers arriving meanwhile wait for the next, which starts as soon as it ends. A value
/// type, tested without sockets.
struct ReplicaAcknowledgementRounds<Waiter> {
    private var queued: [Waiter] = []
    /// Writers in the round in flight.
    private(set) var inFlight = 0
    /// A round is in flight, or about to start.
    private(set) var isRunning = false

    /// Writers queued or in the round in flight.
    var waiting: Int { queued.count + inFlight }

    /// Queues `waiter`; true when the caller must start running rounds (none was running).
    mutating func enqueue(_ waiter: Waiter) -> Bool {
        queued.append(waiter)
        guard !isRunning else { return false }
        isRunning = true
        return true
    }

    /// Puts writers back at the front, in their order, for the next round (a script the server
    /// did not have, to be sent whole).
    mutating func requeue(_ waiters: [Waiter]) {
        queued.insert(contentsOf: waiters, at: 0)
    }

    /// The next round: every queued writer, in arrival order. Nil, and no longer running, when
    /// nobody waits.
    mutating func nextRound() -> [Waiter]? {
        guard !queued.isEmpty else {
            isRunning = false
            inFlight = 0
            return nil
        }
        defer { queued = [] }
        inFlight = queued.count
        return queued
    }
}
