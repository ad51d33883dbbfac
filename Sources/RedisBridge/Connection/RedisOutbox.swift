/// Commands handed over by callers and not yet written to the socket, and when to write them: the
/// decisions of ``RedisConnection``'s write path, as a value tested without a socket.
///
/// Callers on any thread add commands; an addition while no write task is scheduled schedules one
/// event-loop task that writes everything queued by the time it runs and flushes once, so under
/// load one hop and one `write(2)` serve many commands. A caller already on the connection's
/// event loop (a request's task on the gateway's loop) that finds ``eagerBatchSize`` commands
/// queued writes them at once instead: Redis starts on that part of the batch while the loop goes
/// on with the requests that send the rest, so neither side waits for a whole tick's batch. The
/// scheduled task still runs and writes what was queued after that.
struct RedisOutbox<Command> {
    /// What the caller that added commands does next.
    enum Action: Equatable {
        /// Nothing: a write task is already scheduled and will take these commands.
        case none
        /// Schedule the write task on the connection's event loop (it calls ``takeScheduled()``).
        case scheduleWrite
        /// Write now, on this event loop: ``takeNow()``, then write and flush.
        case writeNow
    }

    /// How many queued commands a caller on the connection's event loop writes at once.
    static var eagerBatchSize: Int { 16 }

    private var pending: [Command] = []
    /// A write task is scheduled and has not taken the queue yet.
    private var writeScheduled = false

    /// The commands queued and not yet taken, in order.
    var queued: Int { pending.count }

    /// Queues `commands` in order, with nothing of another caller's between them.
    mutating func add(_ commands: some Collection<Command>, callerOnEventLoop: Bool) -> Action {
        pending.append(contentsOf: commands)
        if callerOnEventLoop && pending.count >= Self.eagerBatchSize { return .writeNow }
        if writeScheduled { return .none }
        writeScheduled = true
        return .scheduleWrite
    }

    /// For the scheduled write task: everything queued; the next addition schedules a new task.
    mutating func takeScheduled() -> [Command] {
        writeScheduled = false
        return takeAll()
    }

    /// For ``Action/writeNow``: everything queued; the scheduled task, if any, stays scheduled.
    mutating func takeNow() -> [Command] { takeAll() }

    private mutating func takeAll() -> [Command] {
        var taken: [Command] = []
        swap(&taken, &pending)
        return taken
    }
}
