/// The lines a ``LogLineWriter`` has been given and not yet written, as a value: what the
/// logging threads and the writer thread agree on under one lock, tested without threads.
///
/// Lines are kept as one run of bytes, up to `capacity` bytes; a line that does not fit is dropped
/// and counted (a stalled reader of standard error must never stop the event loops that log).
///
/// The writer is woken as rarely as the lines allow, because on a loaded core every wake-up is a
/// `futex` call and two context switches on the logging thread's core, which cost more than the
/// `write(2)` a line once had to itself. A line into an empty queue wakes a sleeping writer; the
/// writer then gathers: it waits up to the flush interval for more lines, cut short by
/// `flushSize` bytes queued, an urgent line (a warning or worse), or ``close()``, and writes them
/// all in one `write(2)`.
struct LogLineQueue: Sendable {
    /// What ``enqueue(_:urgent:)`` did with a line.
    enum Enqueued: Equatable, Sendable {
        /// Queued; `wakeWriter` when the writer sleeps and must be signalled (once).
        case queued(wakeWriter: Bool)
        /// Not queued: the queue holds `capacity` bytes already. Counted in the next batch;
        /// `wakeWriter` as for a queued line.
        case dropped(wakeWriter: Bool)
        /// Not queued: the writer has finished. The caller writes the line itself.
        case closed
    }

    /// What the writer does next.
    enum Next: Equatable, Sendable {
        /// Write these bytes (whole lines), then report `dropped` lines lost since the last batch.
        case write([UInt8], dropped: Int)
        /// Lines are queued but few: wait until the flush interval has passed since the first of
        /// them, unless woken sooner; then ask again.
        case gather
        /// Nothing queued: sleep until woken.
        case sleep
        /// Closed and empty: the writer ends.
        case finish
    }

    private enum WriterState: Sendable {
        case running, gathering, sleeping
    }

    /// The most bytes held at once.
    let capacity: Int
    /// Queued bytes at which a gathering writer is woken to write them.
    let flushSize: Int
    private var pending: [UInt8] = []
    private var dropped = 0
    private var urgent = false
    private var writer = WriterState.running
    private var closing = false
    private var finished = false

    init(capacity: Int, flushSize: Int = 32 << 10) {
        self.capacity = max(capacity, 1)
        self.flushSize = max(1, min(flushSize, self.capacity))
    }

    /// Queues `line` (whole, newline included) if it fits; `urgent` lines are written without
    /// waiting for the flush interval.
    mutating func enqueue(_ line: [UInt8], urgent isUrgent: Bool = false) -> Enqueued {
        if finished { return .closed }
        guard line.count <= capacity - pending.count else {
            dropped += 1
            return .dropped(wakeWriter: wakeWriter())
        }
        if pending.isEmpty { pending.reserveCapacity(min(capacity, flushSize + (flushSize >> 1))) }
        pending.append(contentsOf: line)
        urgent = urgent || isUrgent
        return .queued(wakeWriter: wakeWriter())
    }

    /// Whether the line just offered must wake the writer: always when it sleeps, when it
    /// gathers only for a reason to write now.
    private mutating func wakeWriter() -> Bool {
        let wake: Bool
        switch writer {
        case .running: wake = false
        case .sleeping: wake = true
        case .gathering: wake = urgent || dropped > 0 || pending.count >= flushSize
        }
        if wake { writer = .running }
        return wake
    }

    /// The writer's next step. `flushDue`: the flush interval has passed since the writer began
    /// gathering.
    mutating func next(flushDue: Bool) -> Next {
        if pending.isEmpty && dropped == 0 {
            if closing {
                finished = true
                return .finish
            }
            writer = .sleeping
            return .sleep
        }
        guard flushDue || closing || urgent || dropped > 0 || pending.count >= flushSize else {
            writer = .gathering
            return .gather
        }
        var batch: [UInt8] = []
        swap(&batch, &pending)
        defer { (dropped, urgent) = (0, false) }
        writer = .running
        return .write(batch, dropped: dropped)
    }

    /// Asks the writer to write what is queued and end; true when it sleeps or gathers and must be
    /// woken.
    mutating func close() -> Bool {
        closing = true
        let wake = writer != .running
        writer = .running
        return wake
    }
}
