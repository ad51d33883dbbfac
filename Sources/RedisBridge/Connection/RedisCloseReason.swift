import Synchronization

/// Why a connection closed, when an error closed it: written by its channel handler, read when a
/// command finds the connection already closed, so the caller learns the cause (a server that
/// ended the TLS session because it wants a client certificate) rather than only "closed".
///
/// It also says that the connection is going away as soon as that is decided, before the socket
/// has closed (a TLS handler sends `close_notify` first, and the loop closes it after the promises
/// it failed have run): a caller the failure woke up must not be given the same connection again.
final class RedisCloseReason: Sendable {
    private let error = Mutex<RedisError?>(nil)
    private let closing = Atomic<Bool>(false)

    /// Keeps the first error seen; the connection is closing.
    func record(_ error: RedisError) {
        self.error.withLock { if $0 == nil { $0 = error } }
        closing.store(true, ordering: .releasing)
    }

    /// The connection is closing (asked to, or by the client's own decision), with no error to report.
    func markClosing() {
        closing.store(true, ordering: .releasing)
    }

    /// Whether the connection was decided to close: no new command may be given to it.
    var isClosing: Bool { closing.load(ordering: .acquiring) }

    /// The error that closed the connection, if one did.
    var recorded: RedisError? { error.withLock { $0 } }
}
