import NIOCore
import Testing

@testable import RedisBridge

/// Group commit's bookkeeping, without sockets: who starts rounds, who each round carries, and
/// that no writer waits past its own deadline.
@Suite("Replica acknowledgement rounds")
struct ReplicaAcknowledgementRoundsTests {
    /// A writer known by its number, waiting until `deadline`.
    private struct Writer: ReplicaAcknowledgementWaiter, Equatable {
        let id: Int
        let deadline: NIODeadline
    }

    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// Writer `id`, arrived at `start + arrival` ms, waiting `timeout` ms.
    private func writer(_ id: Int, arrival: Int64 = 0, timeout: Int64 = 1000) -> Writer {
        Writer(id: id, deadline: start + .milliseconds(arrival + timeout))
    }

    @Test(
        "the first writer starts the rounds; a round takes everyone queued; the rounds stop when nobody waits, and the next writer starts them again"
    )
    func rounds() {
        var rounds = ReplicaAcknowledgementRounds<Writer>()
        let starts = rounds.enqueue(writer(1))
        let joined = [rounds.enqueue(writer(2)), rounds.enqueue(writer(3))]
        #expect(starts && joined == [false, false] && rounds.waiting == 3)
        let first = rounds.nextRound(now: start)
        #expect(first.round?.waiters.map(\.id) == [1, 2, 3] && first.expired.isEmpty && rounds.inFlight == 3)
        let whileRunning = rounds.enqueue(writer(4))
        #expect(!whileRunning && rounds.waiting == 4, "a round is in flight: the writer waits for the next one")
        let second = rounds.nextRound(now: start)
        #expect(second.round?.waiters.map(\.id) == [4] && rounds.waiting == 1)
        let none = rounds.nextRound(now: start)
        #expect(none.round == nil && !rounds.isRunning && rounds.waiting == 0)
        let restarts = rounds.enqueue(writer(5))
        #expect(restarts)
    }

    @Test("writers put back (a script to send whole) go first in the next round, in their order")
    func requeued() {
        var rounds = ReplicaAcknowledgementRounds<Writer>()
        _ = rounds.enqueue(writer(1))
        _ = rounds.enqueue(writer(2))
        let first = rounds.nextRound(now: start)
        _ = rounds.enqueue(writer(3))
        rounds.requeue(first.round?.waiters ?? [])
        let next = rounds.nextRound(now: start)
        #expect(next.round?.waiters.map(\.id) == [1, 2, 3])
    }

    @Test("a round's WAIT lasts as long as its longest-waiting writer may still wait, at least 1 ms")
    func roundTimeout() {
        var rounds = ReplicaAcknowledgementRounds<Writer>()
        _ = rounds.enqueue(writer(1, arrival: 0, timeout: 1000))
        _ = rounds.enqueue(writer(2, arrival: 300, timeout: 1000))
        _ = rounds.enqueue(writer(3, arrival: 100, timeout: 500))
        let round = rounds.nextRound(now: start + .milliseconds(400))
        #expect(round.round?.timeout == .milliseconds(900), "writer 2 may wait until 1300 ms")
        _ = rounds.enqueue(writer(4, arrival: 400, timeout: 1000))
        let last = rounds.nextRound(now: start + .nanoseconds(1_399_999_900))
        #expect(last.round?.timeout == .milliseconds(1), "WAIT counts in whole milliseconds: never 0, which waits forever")
        _ = rounds.enqueue(Writer(id: 5, deadline: start + .nanoseconds(.max)))
        let endless = rounds.nextRound(now: start)
        #expect(endless.round?.timeout == ReplicaAcknowledgementRounds<Writer>.longestWait, "an endless timeout waits a day at most")
    }

    @Test(
        "a writer whose deadline passes behind a round in flight leaves without being sent; one in the round in flight is answered at its deadline, not the round's end"
    )
    func deadlines() {
        var rounds = ReplicaAcknowledgementRounds<Writer>()
        _ = rounds.enqueue(writer(1, arrival: 0))
        _ = rounds.nextRound(now: start)
        _ = rounds.enqueue(writer(2, arrival: 10))
        _ = rounds.enqueue(writer(3, arrival: 500))
        #expect(rounds.earliestDeadline == start + .milliseconds(1000))

        // Before anyone's deadline: nothing.
        let early = rounds.expire(now: start + .milliseconds(999))
        #expect(early.unsent.isEmpty && early.unacknowledged.isEmpty && rounds.waiting == 3)

        // Writer 1's WAIT is still pending at its deadline: it is answered now.
        let first = rounds.expire(now: start + .milliseconds(1000))
        #expect(first.unacknowledged.map(\.id) == [1] && first.unsent.isEmpty)
        #expect(rounds.inFlight == 0 && rounds.waiting == 2 && rounds.earliestDeadline == start + .milliseconds(1010))

        // Writer 2 is still queued at its deadline (the round ahead of it has not ended): it
        // leaves, never sent; writer 3 waits on.
        let second = rounds.expire(now: start + .milliseconds(1010))
        #expect(second.unsent.map(\.id) == [2] && second.unacknowledged.isEmpty && rounds.waiting == 1)

        // The round ends late: the next one takes writer 3 for what it has left, and a writer
        // found past its deadline then is handed back unsent.
        _ = rounds.enqueue(writer(4, arrival: 20, timeout: 100))
        let next = rounds.nextRound(now: start + .milliseconds(1200))
        #expect(next.round?.waiters.map(\.id) == [3] && next.round?.timeout == .milliseconds(300))
        #expect(next.expired.map(\.id) == [4])
        let done = rounds.nextRound(now: start + .milliseconds(1300))
        #expect(done.round == nil && done.expired.isEmpty && !rounds.isRunning && rounds.earliestDeadline == nil)
    }
}
