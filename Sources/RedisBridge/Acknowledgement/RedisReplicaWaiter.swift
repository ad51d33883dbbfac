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
///
/// Each writer waits at most its own timeout from its arrival (``ReplicaAcknowledgementRounds``):
/// one timer, armed at the earliest deadline of anyone waiting, answers writers whose deadline
/// passed behind a round that the replicas do not answer (after a failover, every write waited the
/// round in flight's timeout and then its own).
final class RedisReplicaWaiter: Sendable {
    /// One writer: its script, what it needs, and who waits for the reply.
    struct Waiter: ReplicaAcknowledgementWaiter {
        let script: RedisScript
        /// `numkeys`, the keys and the arguments, after the script.
        let tail: [RedisArgument]
        /// Send the source (`EVAL`), the server having answered `NOSCRIPT`.
        var sendsSource = false
        let acknowledgement: RedisReplicaAcknowledgement
        let completion: Completion

        var command: RedisCommand { script.command(tail, sendingSource: sendsSource) }
        var deadline: NIODeadline { completion.deadline }
    }

    /// Who waits for a writer's reply, answered once: by its round, or by the timer at its
    /// deadline, whichever comes first (the other finds it answered).
    final class Completion: Sendable {
        let deadline: NIODeadline
        private let continuation: CheckedContinuation<RESPValue, any Error>
        private let answered = Atomic(false)

        init(deadline: NIODeadline, continuation: CheckedContinuation<RESPValue, any Error>) {
            self.deadline = deadline
            self.continuation = continuation
        }

        /// The writer has had its answer.
        var isAnswered: Bool { answered.load(ordering: .acquiring) }

        /// Answers the writer, unless it has been answered already.
        func resume(_ result: Result<RESPValue, RedisError>) {
            guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
            if case .failure(let error) = result { RedisMetrics.failed(error.code) }
            continuation.resume(with: result.mapError { $0 as any Error })
        }
    }

    /// The rounds, and the deadline of the timer armed (nil: none).
    private struct State {
        var rounds = ReplicaAcknowledgementRounds<Waiter>()
        var timerDeadline: NIODeadline?
    }

    private let slot: RedisConnectionSlot
    private let eventLoop: any EventLoop
    private let commandTimeout: TimeAmount
    private let state = Mutex(State())
    private let sent = Atomic<Int>(0)

    /// `eventLoop` runs the deadline timer.
    init(slot: RedisConnectionSlot, eventLoop: any EventLoop, commandTimeout: TimeAmount) {
        self.slot = slot
        self.eventLoop = eventLoop
        self.commandTimeout = commandTimeout
    }

    /// Rounds sent so far (part of the client's round-trip count).
    var rounds: Int { sent.load(ordering: .relaxed) }

    /// Writers queued or in the round in flight (for tests).
    var waiting: Int { state.withLock { $0.rounds.waiting } }

    /// Runs `script` with `tail` (`numkeys`, keys, arguments) in the next round and returns its
    /// reply once `acknowledgement.replicas` replicas have its writes.
    /// - Throws: ``RedisError``: ``RedisError/Code/serverError`` when the script raised an error,
    ///   ``RedisError/Code/replicationTimeout`` when too few replicas answered within
    ///   `acknowledgement.timeout` of the call (the write made on the master, or not sent at all
    ///   when the rounds before it took that long), the acknowledging connection's own failures.
    func evaluate(_ script: RedisScript, tail: [RedisArgument], acknowledgement: RedisReplicaAcknowledgement) async throws -> RESPValue {
        try await withCheckedThrowingContinuation { continuation in
            let completion = Completion(deadline: .now() + acknowledgement.timeout, continuation: continuation)
            let waiter = Waiter(script: script, tail: tail, acknowledgement: acknowledgement, completion: completion)
            let starts = state.withLock { state in
                let starts = state.rounds.enqueue(waiter)
                armTimer(&state, for: waiter.deadline)
                return starts
            }
            // Short-lived: runs rounds while writers wait, then ends.
            if starts { Task { await self.runRounds() } }
        }
    }

    private func runRounds() async {
        while true {
            let next = state.withLock { $0.rounds.nextRound(now: .now()) }
            for waiter in next.expired { waiter.completion.resume(.failure(Self.unsent(waiter))) }
            guard let round = next.round else { return }
            await run(round)
        }
    }

    /// One round: the scripts, then `WAIT` for the most replicas any writer asks for, as long as
    /// the longest-waiting writer may still wait; each writer is then held to its own count.
    private func run(_ round: ReplicaAcknowledgementRounds<Waiter>.Round) async {
        let waiters = round.waiters
        let replicas = waiters.map(\.acknowledgement.replicas).max() ?? 1
        let wait = RedisReplicaAcknowledgement(replicas: replicas, timeout: round.timeout)
        let replies: [RESPValue]
        do {
            let connection = try await slot.connection()
            sent.wrappingAdd(1, ordering: .relaxed)
            replies = try await connection.sendPipelined(
                waiters.map(\.command) + [wait.command], timeout: commandTimeout.addingSaturated(round.timeout))
            guard replies.count == waiters.count + 1 else {
                throw RedisError(.protocolError, "\(waiters.count) scripts and a WAIT got \(replies.count) replies")
            }
        } catch {
            let failure = error as? RedisError ?? RedisError(.connectionFailed, "the acknowledging connection failed")
            for waiter in waiters { waiter.completion.resume(.failure(failure)) }
            return
        }
        let verdict = replies[waiters.count]
        var again: [Waiter] = []
        for (waiter, reply) in zip(waiters, replies) {
            if reply.isNoScript, !waiter.sendsSource {
                // Not run: sent again whole, unless its deadline has answered it meanwhile.
                guard !waiter.completion.isAnswered else { continue }
                RedisMetrics.scriptLoaded()
                var whole = waiter
                whole.sendsSource = true
                again.append(whole)
                continue
            }
            if case .error(let message) = reply {
                waiter.completion.resume(.failure(RedisError(.serverError, message)))
                continue
            }
            do {
                try waiter.acknowledgement.check(verdict)
                waiter.completion.resume(.success(reply))
            } catch {
                waiter.completion.resume(.failure(error as? RedisError ?? RedisError(.unexpectedReply, "WAIT")))
            }
        }
        if !again.isEmpty { state.withLock { $0.rounds.requeue(again) } }
    }

    /// Arms the timer for `deadline` unless one is armed for an earlier moment (held in `state`'s
    /// lock).
    private func armTimer(_ state: inout State, for deadline: NIODeadline) {
        if let armed = state.timerDeadline, armed <= deadline { return }
        state.timerDeadline = deadline
        eventLoop.scheduleTask(deadline: deadline) { [weak self] in self?.deadlinePassed() }
    }

    /// The timer: answers every writer past its deadline, then arms for the next deadline.
    private func deadlinePassed() {
        let (unsent, unacknowledged) = state.withLock { state in
            state.timerDeadline = nil
            let expired = state.rounds.expire(now: .now())
            if let next = state.rounds.earliestDeadline { armTimer(&state, for: next) }
            return expired
        }
        for waiter in unsent { waiter.completion.resume(.failure(Self.unsent(waiter))) }
        for waiter in unacknowledged {
            waiter.completion.resume(
                .failure(
                    RedisError(
                        .replicationTimeout,
                        "the replicas did not acknowledge the write within \(waiter.acknowledgement.timeout.nanoseconds / 1_000_000) ms")))
        }
    }

    /// The error of a writer whose deadline passed before its round was sent.
    private static func unsent(_ waiter: Waiter) -> RedisError {
        RedisError(
            .replicationTimeout,
            "the writes before it were not acknowledged within \(waiter.acknowledgement.timeout.nanoseconds / 1_000_000) ms; this one was not sent"
        )
    }

    /// Moves the acknowledging connection to an announced master (as the pool's slots do).
    func masterSwitched(to address: RedisServerAddress) { slot.masterSwitched(to: address) }

    /// Closes the acknowledging connection once its pending replies have arrived.
    func shutdown() async { await slot.shutdown() }
}
