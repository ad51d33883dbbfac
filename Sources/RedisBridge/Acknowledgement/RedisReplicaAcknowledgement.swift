public import NIOCore

/// How many replicas must have a write before it counts as done (`WAIT numreplicas timeout`),
/// and how long to wait for them.
///
/// `WAIT` waits for the replication offset of its own connection's last write. The client sends
/// acknowledged scripts on a connection of their own, all those waiting at the moment followed by
/// one `WAIT` (``RedisReplicaWaiter``).
public struct RedisReplicaAcknowledgement: Sendable, Hashable {
    /// Replicas that must acknowledge (1 or more).
    public var replicas: Int
    /// How long to wait for them; past it the write fails with ``RedisError/Code/replicationTimeout``.
    public var timeout: TimeAmount

    public init(replicas: Int, timeout: TimeAmount) {
        self.replicas = replicas
        self.timeout = timeout
    }

    /// The `WAIT` command.
    var command: RedisCommand {
        RedisCommand("WAIT", .integer(Int64(replicas)), .integer(max(1, timeout.nanoseconds / 1_000_000)))
    }

    /// Checks `WAIT`'s reply.
    func check(_ reply: RESPValue) throws {
        if case .error(let message) = reply { throw RedisError(.serverError, message) }
        guard let acknowledged = reply.int else { throw RedisError(.unexpectedReply, "WAIT answered \(reply)") }
        guard acknowledged >= replicas else {
            throw RedisError(
                .replicationTimeout,
                "\(acknowledged) of \(replicas) replica\(replicas == 1 ? "" : "s") acknowledged the write within \(timeout.nanoseconds / 1_000_000) ms"
            )
        }
    }
}
