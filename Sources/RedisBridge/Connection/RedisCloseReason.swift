import Synchronization

/// Why a connection closed, when an error closed it: written by its channel handler, read when a
/// command finds the connection already closed, so the caller learns the cause (a server that
/// ended the TLS session because it wants a client certificate) rather than only "closed".
final class RedisCloseReason: Sendable {
    private let error = Mutex<RedisError?>(nil)

    /// Keeps the first error seen.
    func record(_ error: RedisError) {
        self.error.withLock { if $0 == nil { $0 = error } }
    }

    /// The error that closed the connection, if one did.
    var recorded: RedisError? { error.withLock { $0 } }
}
