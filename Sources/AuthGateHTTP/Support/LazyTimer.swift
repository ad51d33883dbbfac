import NIOCore

/// One scheduled task standing for a deadline that moves often (every request), so that moving
/// it later costs nothing: the task fires at the old time, finds the deadline later and sleeps
/// again. Only moving it earlier reschedules. Lives on one event loop with its owner.
struct LazyTimer {
    private var scheduled: Scheduled<Void>?
    private var firesAt: NIODeadline?

    /// Makes sure `fire` runs on `loop` no later than `deadline`.
    mutating func ensure(firesBy deadline: NIODeadline, on loop: any EventLoop, _ fire: @escaping () -> Void) {
        if let firesAt, firesAt <= deadline { return }
        scheduled?.cancel()
        firesAt = deadline
        scheduled = loop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: deadline, fire)
    }

    /// The task ran: nothing is scheduled any more.
    mutating func fired() {
        scheduled = nil
        firesAt = nil
    }

    mutating func cancel() {
        scheduled?.cancel()
        scheduled = nil
        firesAt = nil
    }
}
