import NIOCore

/// A writer waiting for replicas, by the time it stops waiting.
protocol ReplicaAcknowledgementWaiter {
    /// When the writer's acknowledgement timeout, counted from its arrival, runs out.
    var deadline: NIODeadline { get }
}

/// Who is waiting for replicas, in rounds (group commit): each round sends every queued writer's
/// script and one `WAIT` behind them, on the acknowledging connection. At most one round is in
/// flight; writers arriving meanwhile wait for the next, which starts as soon as it ends. A value
/// type, tested without sockets.
///
/// Each writer waits at most its own timeout from its arrival, not the round in flight's and then
/// its own (the replicas gone after a failover made every write wait two timeouts): a round's
/// `WAIT` lasts as long as its longest-waiting writer may still wait (``Round/timeout``); a writer
/// whose deadline passes while it is queued leaves without being sent, and one whose deadline
/// passes while its round's `WAIT` is pending is answered then (``expire(now:)``).
struct ReplicaAcknowledgementRounds<Waiter: ReplicaAcknowledgementWaiter> {
    /// One round to send: its writers in order, and how long its `WAIT` may last.
    struct Round {
        var waiters: [Waiter]
        /// The longest any of them may still wait (at least 1 ms, `WAIT`'s unit, and at most
        /// ``longestWait``).
        var timeout: TimeAmount
    }

    /// The longest a round's `WAIT` lasts, whatever a writer asked (the public API takes any
    /// timeout): the round holds the acknowledging connection, and every writer queued behind it,
    /// that long. (The deadline sums around it saturate on their own, `addingSaturated`.)
    static var longestWait: TimeAmount { .hours(24) }

    private var queued: [Waiter] = []
    /// Writers of the round in flight not yet past their deadline.
    private var inFlightWaiters: [Waiter] = []
    /// A round is in flight, or about to start.
    private(set) var isRunning = false

    /// Writers in the round in flight (not yet answered by their deadline).
    var inFlight: Int { inFlightWaiters.count }

    /// Writers queued or in the round in flight.
    var waiting: Int { queued.count + inFlightWaiters.count }

    /// The earliest deadline of a writer still waiting (queued or in flight).
    var earliestDeadline: NIODeadline? {
        var earliest: NIODeadline?
        for waiter in queued { earliest = earliest.map { min($0, waiter.deadline) } ?? waiter.deadline }
        for waiter in inFlightWaiters { earliest = earliest.map { min($0, waiter.deadline) } ?? waiter.deadline }
        return earliest
    }

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

    /// The next round at `now` (the one in flight has ended): every queued writer still within
    /// its deadline, in arrival order, and those past it, to be answered without being sent. Nil
    /// for the round, and no longer running, when nobody waits.
    mutating func nextRound(now: NIODeadline) -> (round: Round?, expired: [Waiter]) {
        inFlightWaiters = []
        let expired = Self.takeExpired(from: &queued, now: now)
        guard let longest = queued.lazy.map(\.deadline).max() else {
            isRunning = false
            return (nil, expired)
        }
        defer { queued = [] }
        inFlightWaiters = queued
        return (Round(waiters: queued, timeout: min(Self.longestWait, max(.milliseconds(1), longest - now))), expired)
    }

    /// The writers past their deadline at `now`: queued ones, taken out (never sent), and those of
    /// the round in flight, whose `WAIT` has not answered yet (their scripts were sent: run on the
    /// master, or about to be).
    mutating func expire(now: NIODeadline) -> (unsent: [Waiter], unacknowledged: [Waiter]) {
        (Self.takeExpired(from: &queued, now: now), Self.takeExpired(from: &inFlightWaiters, now: now))
    }

    /// Takes the writers past their deadline at `now` out of `waiters`, in their order.
    private static func takeExpired(from waiters: inout [Waiter], now: NIODeadline) -> [Waiter] {
        let expired = waiters.filter { $0.deadline <= now }
        if !expired.isEmpty { waiters.removeAll { $0.deadline <= now } }
        return expired
    }
}
