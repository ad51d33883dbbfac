import Testing

@testable import RedisBridge

/// Group commit's bookkeeping, without sockets: who starts rounds, and who each round answers.
@Suite("Replica acknowledgement rounds")
struct ReplicaAcknowledgementRoundsTests {
    @Test(
        "the first writer starts the rounds; a round takes everyone queued; the rounds stop when nobody waits, and the next writer starts them again")
    func rounds() {
        var rounds = ReplicaAcknowledgementRounds<Int>()
        let starts = rounds.enqueue(1, markerKey: "m")
        let joined = [rounds.enqueue(2, markerKey: "m"), rounds.enqueue(3, markerKey: "m")]
        #expect(starts && joined == [false, false])
        let first = rounds.nextRound()
        #expect(first?.markerKey == "m" && first?.waiters == [1, 2, 3])
        let whileRunning = rounds.enqueue(4, markerKey: "m")
        #expect(!whileRunning, "a round is running: the writer waits for the next one")
        let second = rounds.nextRound()
        #expect(second?.waiters == [4])
        let none = rounds.nextRound()
        #expect(none == nil && !rounds.isRunning)
        let restarts = rounds.enqueue(5, markerKey: "m")
        #expect(restarts)
    }

    @Test("a round writes one marker key: writers with another key wait for a round of their own, in order")
    func markerKeys() {
        var rounds = ReplicaAcknowledgementRounds<Int>()
        _ = rounds.enqueue(1, markerKey: "a")
        _ = rounds.enqueue(2, markerKey: "b")
        _ = rounds.enqueue(3, markerKey: "a")
        let first = rounds.nextRound()
        #expect(first?.markerKey == "a" && first?.waiters == [1, 3])
        let second = rounds.nextRound()
        #expect(second?.markerKey == "b" && second?.waiters == [2])
        let none = rounds.nextRound()
        #expect(none == nil)
    }
}
