import NIOCore

/// The state of one pipelined Redis connection: the queue of commands waiting for replies, their
/// deadlines, and whether the connection is open, draining or closed.
///
/// A value type with no I/O: every transition returns an action that ``RedisChannelHandler``
/// carries out, so the rules can be tested on their own. Generic over `Pending` (a promise in
/// production, anything in tests).
struct RedisCommandStateMachine<Pending> {
    private enum State {
        case active
        case draining
        case closed(RedisError)
    }

    private struct Entry {
        let pending: Pending
        let deadline: NIODeadline
    }

    private var state: State = .active
    /// Subscribed (`SUBSCRIBE`): a reply nobody waits for is a message pushed by the server.
    private var acceptsPushes = false
    private var queue = CircularBuffer<Entry>(initialCapacity: 16)
    /// When the deadline timer is due, or nil when none is scheduled.
    private(set) var timerDeadline: NIODeadline?

    /// Commands waiting for a reply.
    var pendingCount: Int { queue.count }

    /// What to do with a command the caller wants to send.
    enum SendAction {
        /// Write it; if `scheduleTimer` is set, (re)arm the deadline timer for that time.
        case write(scheduleTimer: NIODeadline?)
        /// Do not write it; fail it with the error.
        case fail(Pending, RedisError)
    }

    /// Records a command that is about to be written.
    mutating func sendCommand(_ pending: Pending, deadline: NIODeadline) -> SendAction {
        switch state {
        case .active:
            queue.append(Entry(pending: pending, deadline: deadline))
            if let timerDeadline, timerDeadline <= deadline { return .write(scheduleTimer: nil) }
            timerDeadline = deadline
            return .write(scheduleTimer: deadline)
        case .draining:
            return .fail(pending, RedisError(.connectionClosed, "the connection is closing and takes no new commands"))
        case .closed(let error):
            return .fail(pending, error)
        }
    }

    /// What to do with a reply that arrived.
    enum ReplyAction {
        /// Complete this command with the reply.
        case succeed(Pending, RESPValue)
        /// Complete this command, then close: the connection was draining and is now idle.
        case succeedAndClose(Pending, RESPValue)
        /// Nobody asked for this reply: the stream is out of step, fail everything and close.
        case failAllAndClose([Pending], RedisError)
        /// The connection is already closed; ignore the reply.
        case ignore
        /// A message the server pushed on a subscribed connection.
        case push(RESPValue)
    }

    /// From now on, a reply with no command waiting is a pushed message (the connection is about
    /// to subscribe), not a protocol error.
    mutating func acceptPushes() {
        acceptsPushes = true
    }

    /// Matches a reply to the oldest command waiting (RESP replies arrive in command order).
    mutating func receivedReply(_ value: RESPValue) -> ReplyAction {
        if case .closed = state { return .ignore }
        guard let entry = queue.popFirst() else {
            if acceptsPushes { return .push(value) }
            return failAll(RedisError(.protocolError, "received a reply with no command waiting for it"))
        }
        if case .draining = state, queue.isEmpty {
            state = .closed(RedisError(.connectionClosed, "the connection was closed after draining"))
            return .succeedAndClose(entry.pending, value)
        }
        return .succeed(entry.pending, value)
    }

    /// What to do when the deadline timer fires.
    enum TimerAction {
        /// Nothing is overdue and nothing is waiting.
        case none
        /// Nothing is overdue; arm the timer again for this time.
        case reschedule(NIODeadline)
        /// A command is overdue: fail every waiting command and close the connection.
        case failAllAndClose([Pending], RedisError)
    }

    /// Checks deadlines when the timer fires.
    mutating func timerFired(now: NIODeadline) -> TimerAction {
        timerDeadline = nil
        if case .closed = state { return .none }
        var earliest: NIODeadline?
        for entry in queue {
            if entry.deadline <= now {
                if case .failAllAndClose(let pending, let error) = failAll(
                    RedisError(.timeout, "no reply within the command deadline; the connection was closed")
                ) {
                    return .failAllAndClose(pending, error)
                }
                return .none
            }
            earliest = min(earliest ?? entry.deadline, entry.deadline)
        }
        guard let earliest else { return .none }
        timerDeadline = earliest
        return .reschedule(earliest)
    }

    /// The connection failed (protocol error, oversized reply, socket error): fail everything and close.
    mutating func errorCaught(_ error: RedisError) -> ReplyAction {
        if case .closed = state { return .ignore }
        return failAll(error)
    }

    /// The socket closed: fail whatever is still waiting.
    mutating func channelInactive() -> [Pending] {
        if case .closed = state { return drainQueue() }
        state = .closed(RedisError(.connectionClosed, "the connection to Redis closed"))
        return drainQueue()
    }

    /// What to do when the owner asks for a graceful close.
    enum CloseAction {
        /// Nothing is waiting: close now.
        case closeNow
        /// Replies are still due: close after the last one.
        case waitForDrain
        /// Already closed or closing.
        case none
    }

    /// Stops taking commands and closes once every waiting command has its reply.
    mutating func gracefulClose() -> CloseAction {
        switch state {
        case .active:
            if queue.isEmpty {
                state = .closed(RedisError(.connectionClosed, "the connection was closed"))
                return .closeNow
            }
            state = .draining
            return .waitForDrain
        case .draining, .closed:
            return .none
        }
    }

    private mutating func failAll(_ error: RedisError) -> ReplyAction {
        state = .closed(error)
        return .failAllAndClose(drainQueue(), error)
    }

    private mutating func drainQueue() -> [Pending] {
        let pending = queue.map(\.pending)
        queue.removeAll()
        timerDeadline = nil
        return pending
    }
}
