import Testing

@testable import RedisBridge

/// Group commit's bookkeeping, without sockets: who starts rounds, and who each round carries.
@Suite("Replica acknowledgement rounds")
struct ReplicaAcknowledgementRoundsTests {
    @Test(
        "the first writer starts the rounds; a round takes everyone queued; the rounds stop when nobody waits, and the next writer starts them again"
    )
    func rounds() {
        var rounds = ReplicaAcknowledgementRounds<Int>()
        let starts = rounds.enqueue(1)
        let joined = [rounds.enqueue(2), rounds.enqueue(3)]
        #expect(starts && joined == [false, false] && rounds.waiting == 3)
        let first = rounds.nextRound()
        #expect(first == [1, 2, 3] && rounds.inFlight == 3)
        let whileRunning = rounds.enqueue(4)
        #expect(!whileRunning && rounds.waiting == 4, "a round is in flight: the writer waits for the next one")
        let second = rounds.nextRound()
        #expect(second == [4] && rounds.waiting == 1)
        let none = rounds.nextRound()
        #expect(none == nil && !rounds.isRunning && rounds.waiting == 0)
        let restarts = rounds.enqueue(5)
        #expect(restarts)
    }

    @Test("writers put back (a script to send whole) go first in the next round, in their order")
    func requeued() {
        var rounds = ReplicaAcknowledgementRounds<Int>()
        _ = rounds.enqueue(1)
        _ = rounds.enqueue(2)
        _ = rounds.nextRound()
        _ = rounds.enqueue(3)
        rounds.requeue([1, 2])
        let next = rounds.nextRound()
        #expect(next == [1, 2, 3])
    }
}
