import Testing

@testable import RedisBridge

@Suite("Redis outbox: when queued commands are written", .timeLimit(.minutes(1)))
struct RedisOutboxTests {
    @Test("the first command schedules one write task; later ones ride on it, in order")
    func oneTaskPerBatch() {
        var outbox = RedisOutbox<Int>()
        #expect(outbox.add([1], callerOnEventLoop: false) == .scheduleWrite)
        #expect(outbox.add([2, 3], callerOnEventLoop: false) == .none)
        #expect(outbox.add([4], callerOnEventLoop: true) == .none)
        #expect(outbox.takeScheduled() == [1, 2, 3, 4])
        #expect(outbox.queued == 0)
        // Taken: the next command schedules a new task.
        #expect(outbox.add([5], callerOnEventLoop: false) == .scheduleWrite)
        #expect(outbox.takeScheduled() == [5])
    }

    @Test("a caller on the event loop writes a full part at once; the scheduled task takes the rest")
    func eagerPartsOnTheLoop() {
        var outbox = RedisOutbox<Int>()
        let size = RedisOutbox<Int>.eagerBatchSize
        var written: [[Int]] = []
        for command in 0..<(2 * size + 3) {
            switch outbox.add([command], callerOnEventLoop: true) {
            case .scheduleWrite: #expect(command == 0, "only the batch's first command schedules the task")
            case .writeNow: written.append(outbox.takeNow())
            case .none: break
            }
        }
        #expect(written == [Array(0..<size), Array(size..<(2 * size))])
        // The task scheduled by the first command is still due, and takes the tail.
        #expect(outbox.add([99], callerOnEventLoop: false) == .none)
        #expect(outbox.takeScheduled() == Array((2 * size)..<(2 * size + 3)) + [99])
    }

    @Test("callers on other threads never write: the whole batch waits for the loop's task")
    func offLoopCallersOnlyQueue() {
        var outbox = RedisOutbox<Int>()
        let count = 3 * RedisOutbox<Int>.eagerBatchSize
        var actions: [RedisOutbox<Int>.Action] = []
        for command in 0..<count { actions.append(outbox.add([command], callerOnEventLoop: false)) }
        #expect(actions.first == .scheduleWrite)
        #expect(actions.dropFirst().allSatisfy { $0 == .none })
        #expect(outbox.takeScheduled() == Array(0..<count))
    }

    @Test("a pipelined group is queued whole: nothing of another caller's between its commands")
    func pipelinedGroupStaysTogether() {
        var outbox = RedisOutbox<String>()
        let size = RedisOutbox<String>.eagerBatchSize
        for index in 0..<(size - 1) { _ = outbox.add(["single \(index)"], callerOnEventLoop: true) }
        // The group crosses the part's size: it is written with the part, whole.
        #expect(outbox.add(["EVALSHA", "WAIT"], callerOnEventLoop: true) == .writeNow)
        let part = outbox.takeNow()
        #expect(part.count == size + 1)
        #expect(part.suffix(2) == ["EVALSHA", "WAIT"])
    }
}
