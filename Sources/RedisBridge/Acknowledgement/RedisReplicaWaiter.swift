import NIOCore
import Synchronization

/// Runs scripts whose writes must reach replicas (`store.redis.min_replicas_acked`), many writers
/// at once, on a connection of its own (group commit).
///
/// `WAIT` blocks the connection it is sent on until the replicas answer, so on a pooled
/// connection it held every command queued behind it for a replication round trip. Here a round
/// sends every queued writer's script and one `WAIT` behind them, in one write: `WAIT` waits for
/// the replication offset of the connection's last write, so one `WAIT` covers every script of the
/// round, and no pooled connection is ever blocked. Writers arriving while a round is in flight
/// wait for the next one (``ReplicaAcknowledgementRounds``), which starts when it ends: each round
/// trip acknowledges everyone who was waiting, however many.
///
/// A script the server does not have (`NOSCRIPT`: a restart, a failover) goes again whole
/// (`EVAL`) in the next round.
final class RedisReplicaWaiter: Sendable {
    /// One writer: its script, what it needs, and who waits for the reply.
    struct Waiter {
        let script: RedisScript
        /// `numkeys`, the keys and the arguments, after the script.
        let tail: [RedisArgument]
        /// Send the source (`EVAL`), the server having answered `NOSCRIPT`.
        var sendsSource = false
        let acknowledgement: RedisReplicaAcknowledgement
        let continuation: CheckedContinuation<RESPValue, any Error>

        var command: RedisCommand { script.command(tail, sendingSource: sendsSource) }
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

    /// Writers queued or in the round in flight (for tests).
    var waiting: Int { queue.withLock { $0.waiting } }

    /// Runs `script` with `tail` (`numkeys`, keys, arguments) in the next round and returns its
    /// reply once `acknowledgement.replicas` replicas have its writes.
    /// - Throws: ``RedisError``: ``RedisError/Code/serverError`` when the script raised an error,
    ///   ``RedisError/Code/replicationTimeout`` when too few replicas answered in time (the write
    ///   was made on the master), the acknowledging connection's own failures.
    func evaluate(_ script: RedisScript, tail: [RedisArgument], acknowledgement: RedisReplicaAcknowledgement) async throws -> RESPValue {
        try await withCheckedThrowingContinuation { continuation in
            let waiter = Waiter(script: script, tail: tail, acknowledgement: acknowledgement, continuation: continuation)
            let starts = queue.withLock { $0.enqueue(waiter) }
            // Short-lived: runs rounds while writers wait, then ends.
            if starts { Task { await self.runRounds() } }
        }
    }

    private func runRounds() async {
        while let round = queue.withLock({ $0.nextRound() }) {
            await run(round)
        }
    }

    /// One round: the scripts, then `WAIT` for the most replicas and the longest timeout any
    /// writer asks for; each writer is then held to its own count.
    private func run(_ waiters: [Waiter]) async {
        let replicas = waiters.map(\.acknowledgement.replicas).max() ?? 1
        let timeout = waiters.map(\.acknowledgement.timeout).max() ?? .seconds(1)
        let wait = RedisReplicaAcknowledgement(replicas: replicas, timeout: timeout)
        let replies: [RESPValue]
        do {
            let connection = try await slot.connection()
            sent.wrappingAdd(1, ordering: .relaxed)
            replies = try await connection.sendPipelined(waiters.map(\.command) + [wait.command], timeout: commandTimeout + timeout)
            guard replies.count == waiters.count + 1 else {
                throw RedisError(.protocolError, "\(waiters.count) scripts and a WAIT got \(replies.count) replies")
            }
        } catch {
            let failure = error as? RedisError ?? RedisError(.connectionFailed, "the acknowledging connection failed")
            for waiter in waiters { fail(waiter, failure) }
            return
        }
        let verdict = replies[waiters.count]
        var again: [Waiter] = []
        for (waiter, reply) in zip(waiters, replies) {
            if reply.isNoScript, !waiter.sendsSource {
                RedisMetrics.scriptLoaded()
                var whole = waiter
                whole.sendsSource = true
                again.append(whole)
                continue
            }
            if case .error(let message) = reply {
                fail(waiter, RedisError(.serverError, message))
                continue
            }
            do {
                try waiter.acknowledgement.check(verdict)
                waiter.continuation.resume(returning: reply)
            } catch {
                fail(waiter, error as? RedisError ?? RedisError(.unexpectedReply, "WAIT"))
            }
        }
        if !again.isEmpty { queue.withLock { $0.requeue(again) } }
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
