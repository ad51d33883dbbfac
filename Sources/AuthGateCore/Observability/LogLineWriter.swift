import Dispatch
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writes log lines to standard error from a thread of its own, so that no event loop ever waits
/// on the reader of the gateway's logs.
///
/// A log line used to be one `write(2)` on the thread that logged it. When the reader of standard
/// error stalls (a paused `docker logs` driver, a full journald, a stopped `| tee`), the pipe
/// fills after about 64 KiB and that `write(2)` blocks: at `info`, where every request writes an
/// access line, the event loop stopped after a few hundred requests and no request was answered,
/// `/health` included, until the reader came back.
///
/// Now a line is queued (``LogLineQueue``, up to `capacity` bytes) and this writer's thread
/// writes what is queued in one `write(2)`: after at most `flushInterval` (100 ms), at once for
/// 32 KiB of lines or a warning or worse. Waking the writer per line cost more than the
/// `write(2)` it replaced (a `futex` call and two context switches on the logging core). When the
/// queue is full, lines are dropped and counted: the writer reports the count in a warning line
/// once it can write again, and in `authgate_log_lines_dropped_total` (the policy of Docker's
/// `mode: non-blocking`). Audit events do not go through logs (they are recorded in the store),
/// so nothing but log lines can be lost.
///
/// ``close(waitingAtMost:)`` writes what is queued and ends the thread, waiting a bounded time
/// for a stalled reader; a line logged after that is written directly by the thread that logs it.
public final class LogLineWriter: Sendable {
    /// The caller's descriptor: lines logged after ``close(waitingAtMost:)`` are written to it.
    private let descriptor: CInt
    /// What the thread writes to: its own duplicate of `descriptor` (close-on-exec), closed when
    /// the thread ends. A thread that `close` gave up on may still be writing after its caller
    /// closed `descriptor`; with the caller's number it would write into whatever file or socket
    /// reused that number (seen in the tests: log lines reached a Redis connection and a child's
    /// pipe). `descriptor` itself only when it cannot be duplicated.
    private let threadDescriptor: CInt
    private let queue: Mutex<LogLineQueue>
    private let flushInterval: DispatchTimeInterval
    private let wakeUp = DispatchSemaphore(value: 0)
    /// Signalled once by the thread as it ends.
    private let ended = DispatchSemaphore(value: 0)
    /// Whether a thread runs that ``close(waitingAtMost:)`` has not yet waited for.
    private let running = Mutex(false)

    /// Starts a writer for `descriptor` (standard error by default) holding up to `capacity`
    /// bytes of lines not yet written. A line waits at most `flushInterval` (unless the reader is
    /// behind); 32 KiB of lines or an urgent one are written at once.
    public init(descriptor: CInt = 2, capacity: Int, flushInterval: Duration = .milliseconds(100)) {
        self.descriptor = descriptor
        let duplicate = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        self.threadDescriptor = duplicate >= 0 ? duplicate : descriptor
        self.queue = Mutex(LogLineQueue(capacity: capacity))
        self.flushInterval = Self.interval(flushInterval)
        startThread()
    }

    /// Queues one line (newline included); when the writer has ended, writes it at once.
    /// `urgent` (a warning or worse): written without waiting for the flush interval.
    public func write(_ line: [UInt8], urgent: Bool = false) {
        switch queue.withLock({ $0.enqueue(line, urgent: urgent) }) {
        case .queued(let wakeWriter), .dropped(let wakeWriter):
            if wakeWriter { wakeUp.signal() }
        case .closed:
            _ = Self.writeFully(descriptor, line)
        }
    }

    /// Writes every queued line and ends the writer's thread; returns when they are written, or
    /// after `limit` when the reader is stalled (the lines still queued are then lost with the
    /// process, which must not wait on its log reader to exit). Later lines are written by the
    /// thread that logs them. Call it once the gateway has stopped.
    /// - Returns: false when `limit` passed first.
    @discardableResult
    public func close(waitingAtMost limit: Duration = .seconds(2)) -> Bool {
        guard
            running.withLock({ running in
                defer { running = false }
                return running
            })
        else { return true }
        if queue.withLock({ $0.close() }) { wakeUp.signal() }
        return ended.wait(timeout: .now() + Self.interval(limit)) == .success
    }

    /// `duration` for Dispatch: its saturating whole nanoseconds (`Duration.nanoseconds`), at
    /// least 0.
    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        .nanoseconds(Int(clamping: max(duration.nanoseconds, 0)))
    }

    /// A stream for swift-log's `StreamLogHandler` (`logging.format: text`) that goes through
    /// this writer: the handler writes each line in one call.
    public struct TextStream: TextOutputStream, Sendable {
        let writer: LogLineWriter
        /// Whether each line is urgent (``TextLogHandler`` keeps a stream for warnings and worse).
        let urgent: Bool

        public init(_ writer: LogLineWriter, urgent: Bool = false) {
            self.writer = writer
            self.urgent = urgent
        }

        public mutating func write(_ string: String) {
            writer.write(Array(string.utf8), urgent: urgent)
        }
    }

    private func startThread() {
        let context = Unmanaged.passRetained(self).toOpaque()
        running.withLock { $0 = true }
        var created = pthread_t()
        let result = pthread_create(
            &created, nil,
            { context in
                guard let context else { return nil }
                Unmanaged<LogLineWriter>.fromOpaque(context).takeRetainedValue().run()
                return nil
            }, context)
        guard result == 0 else {
            // No thread: every line is written by the thread that logs it, as before.
            Unmanaged<LogLineWriter>.fromOpaque(context).release()
            releaseThreadDescriptor()
            running.withLock { $0 = false }
            queue.withLock { queue in
                _ = queue.close()
                _ = queue.next(flushDue: true)
            }
            return
        }
        // Nobody joins it: close waits for `ended`, with a limit.
        pthread_detach(created)
    }

    /// The writer's thread: gathers lines for up to `flushInterval`, writes each batch, reports
    /// drops, sleeps while nothing is queued.
    private func run() {
        Self.nameThisThread()
        var flushAt: DispatchTime?
        while true {
            let flushDue = flushAt.map { DispatchTime.now() >= $0 } ?? false
            switch queue.withLock({ $0.next(flushDue: flushDue) }) {
            case .write(let bytes, let dropped):
                flushAt = nil
                var lost = dropped
                if !Self.writeFully(threadDescriptor, bytes) { lost += bytes.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 } }
                if lost > 0 { reportLost(lost, queueFull: dropped) }
            case .gather:
                let deadline = flushAt ?? DispatchTime.now() + flushInterval
                flushAt = deadline
                _ = wakeUp.wait(timeout: deadline)
            case .sleep:
                flushAt = nil
                wakeUp.wait()
            case .finish:
                releaseThreadDescriptor()
                ended.signal()
                return
            }
        }
    }

    /// Closes the thread's duplicate of the descriptor (never the caller's).
    private func releaseThreadDescriptor() {
        if threadDescriptor != descriptor { Glibc.close(threadDescriptor) }
    }

    /// The name `top -H`, `ps -L` and `/proc/PID/task/*/comm` show for the writer's thread.
    static let threadName = "authgate-log"

    /// Names the calling thread ``threadName`` through `/proc/thread-self/comm` (what
    /// `pthread_setname_np` does on Linux; the function itself is hidden from Swift by glibc's
    /// `_GNU_SOURCE` guard). Best effort: an unnamed thread works the same.
    private static func nameThisThread() {
        let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard file >= 0 else { return }
        _ = writeFully(file, Array(threadName.utf8))
        Glibc.close(file)
    }

    private func reportLost(_ lost: Int, queueFull: Int) {
        GatewayMetrics.logLinesDropped(lost)
        guard queueFull > 0 else { return }
        Logger(label: "authgate.log").warning(
            "log lines dropped: standard error was not read fast enough",
            metadata: ["gw.dropped_lines": "\(queueFull)"]
        )
    }

    /// Writes all of `bytes` to `descriptor`, through interrupted and would-block writes (waiting
    /// with `poll` for the latter); false when the descriptor fails (closed reader, bad descriptor).
    static func writeFully(_ descriptor: CInt, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return true }
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(descriptor, base + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                guard written < 0 else { return false }
                switch errno {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, 1000)
                default:
                    return false
                }
            }
            return true
        }
    }
}
