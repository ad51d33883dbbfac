import NIOCore
import Synchronization

/// Waits for replicas to have writes (`store.redis.min_replicas_acked`), for many writers at
/// once, on a connection of its own.
///
/// `WAIT` blocks the connection it is sent on until the replicas answer, so sent on a pooled
/// connection it held every command queued behind it for a replication round trip. Here a writer
/// runs its script on any pooled connection as usual and then joins a round
/// (``ReplicaAcknowledgementRounds``): the round writes a marker key (`INCR`) and sends
/// `WAIT numreplicas timeout` on this waiter's own connection. The marker is written after every
/// queued writer's script has answered, and replication is one ordered stream, so a replica that
/// has the marker has those writes too: one `WAIT` answers everyone queued (group commit), and
/// no pooled connection is ever blocked.
///
/// A writer whose script ran on another node than the one the round reached (a failover in
/// between) is not acknowledged: it fails with ``RedisError/Code/replicationTimeout``, its write
/// perhaps lost with the old master, and a retry is safe.
final class RedisReplicaWaiter: Sendable {
    /// One writer waiting: what it needs and where its write was made.
    struct Waiter {
        let acknowledgement: RedisReplicaAcknowledgement
        let node: RedisServerAddress
        let continuation: CheckedContinuation<Void, any Error>
    }

    private let slot: RedisConnectionSlot
    private let commandTimeout: TimeAmount
    private let queue = Mutex(ReplicaAcknowledgementRounds<Waiter>())
    private let sent = Atomic<Int>(0)

    init(slot: RedisConnectionSlot, commandTimeout: TimeAmount) {
        self.slot = slot
        self.commandTimeout = commandTimeout
    }

    /// Rounds sent so far (part of the client's round-trip count).
    var rounds: Int { sent.load(ordering: .relaxed) }

    /// Returns once `acknowledgement.replicas` replicas have every write made on `node` before
    /// this call.
    /// - Throws: ``RedisError``: ``RedisError/Code/replicationTimeout`` when too few replicas
    ///   answered in time or the master changed; the acknowledging connection's own failures.
    func acknowledge(_ acknowledgement: RedisReplicaAcknowledgement, writtenOn node: RedisServerAddress) async throws {
        try await withCheckedThrowingContinuation { continuation in
            let waiter = Waiter(acknowledgement: acknowledgement, node: node, continuation: continuation)
            let starts = queue.withLock { $0.enqueue(waiter, markerKey: acknowledgement.markerKey) }
            // Short-lived: runs rounds while writers wait, then ends.
            if starts { Task { await self.runRounds() } }
        }
    }

    private func runRounds() async {
        while let round = queue.withLock({ $0.nextRound() }) {
            await run(markerKey: round.markerKey, round.waiters)
        }
    }

    /// One marker write and one `WAIT` for `waiters` (the most replicas and the longest timeout
    /// any of them asks for; each is then held to its own count).
    private func run(markerKey: String, _ waiters: [Waiter]) async {
        let replicas = waiters.map(\.acknowledgement.replicas).max() ?? 1
        let timeout = waiters.map(\.acknowledgement.timeout).max() ?? .seconds(1)
        let wait = RedisReplicaAcknowledgement(replicas: replicas, timeout: timeout, markerKey: markerKey)
        let replies: [RESPValue]
        let reached: RedisServerAddress
        do {
            let connection = try await slot.connection()
            sent.wrappingAdd(1, ordering: .relaxed)
            replies = try await connection.sendPipelined([RedisCommand("INCR", .string(markerKey)), wait.command], timeout: commandTimeout + timeout)
            reached = connection.address
            guard replies.count == 2 else { throw RedisError(.protocolError, "a marker and its WAIT got \(replies.count) replies") }
            if case .error(let message) = replies[0] { throw RedisError(.serverError, message) }
        } catch {
            let failure = error as? RedisError ?? RedisError(.connectionFailed, "the acknowledging connection failed")
            for waiter in waiters { fail(waiter, failure) }
            return
        }
        for waiter in waiters {
            guard waiter.node == reached else {
                fail(waiter, RedisError(.replicationTimeout, "the master changed before the replicas acknowledged the write"))
                continue
            }
            do {
                try waiter.acknowledgement.check(replies[1])
                waiter.continuation.resume()
            } catch {
                fail(waiter, error as? RedisError ?? RedisError(.unexpectedReply, "WAIT"))
            }
        }
    }

    private func fail(_ waiter: Waiter, _ error: RedisError) {
        RedisMetrics.failed(error.code)
        waiter.continuation.resume(throwing: error)
    }

    /// Moves the acknowledging connection to an announced master (as the pool's slots do).
    func masterSwitched(to address: RedisServerAddress) { slot.masterSwitched(to: address) }

    /// Closes the acknowledging connection once its pending replies have arrived.
    func shutdown() async { await slot.shutdown() }
}
