import Testing

@testable import AuthGateCore

/// The log writer's queue as a value: what is queued, dropped, gathered, woken and finished,
/// without threads.
@Suite("Log line queue")
struct LogLineQueueTests {
    private static func line(_ text: String) -> [UInt8] { Array((text + "\n").utf8) }

    @Test("a line wakes the sleeping writer once; it gathers until the flush is due, then writes everything queued, in order")
    func gathersThenWrites() {
        var queue = LogLineQueue(capacity: 1024, flushSize: 100)
        #expect(queue.next(flushDue: false) == .sleep)
        #expect(queue.enqueue(Self.line("a")) == .queued(wakeWriter: true))
        #expect(queue.enqueue(Self.line("b")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: false) == .gather)
        // Gathering: small info lines do not wake it.
        #expect(queue.enqueue(Self.line("c")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: true) == .write(Self.line("a") + Self.line("b") + Self.line("c"), dropped: 0))
        // Lines logged while that batch is written: no wake-up, the writer comes back for them.
        #expect(queue.enqueue(Self.line("d")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: false) == .gather)
        #expect(queue.next(flushDue: true) == .write(Self.line("d"), dropped: 0))
        #expect(queue.next(flushDue: false) == .sleep)
        #expect(queue.enqueue(Self.line("e")) == .queued(wakeWriter: true))
    }

    @Test("a gathering writer is woken by an urgent line or by flushSize bytes, and writes at once")
    func urgentAndFullCutTheWaitShort() {
        var queue = LogLineQueue(capacity: 1024, flushSize: 10)
        #expect(queue.next(flushDue: false) == .sleep)
        #expect(queue.enqueue(Self.line("info")) == .queued(wakeWriter: true))
        #expect(queue.next(flushDue: false) == .gather)
        #expect(queue.enqueue(Self.line("warning"), urgent: true) == .queued(wakeWriter: true))
        #expect(queue.next(flushDue: false) == .write(Self.line("info") + Self.line("warning"), dropped: 0))
        #expect(queue.enqueue(Self.line("1234")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: false) == .gather)
        #expect(queue.enqueue(Self.line("5678")) == .queued(wakeWriter: true), "10 bytes queued: flushSize reached")
        #expect(queue.next(flushDue: false) == .write(Self.line("1234") + Self.line("5678"), dropped: 0))
        // Urgency does not outlive its batch.
        #expect(queue.enqueue(Self.line("x")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: false) == .gather)
    }

    @Test("past capacity a line is dropped whole and counted once in the next batch; room again takes lines again")
    func dropsPastCapacity() {
        var queue = LogLineQueue(capacity: 10, flushSize: 10)
        #expect(queue.enqueue(Self.line("12345")) == .queued(wakeWriter: false))
        // 6 bytes queued: a 6-byte line does not fit, a 4-byte one does, then nothing does.
        #expect(queue.enqueue(Self.line("abcde")) == .dropped(wakeWriter: false))
        #expect(queue.enqueue(Self.line("xyz")) == .queued(wakeWriter: false))
        #expect(queue.enqueue(Self.line("")) == .dropped(wakeWriter: false))
        #expect(queue.enqueue(Array(repeating: 65, count: 11)) == .dropped(wakeWriter: false))
        #expect(queue.next(flushDue: false) == .write(Self.line("12345") + Self.line("xyz"), dropped: 3))
        #expect(queue.enqueue(Self.line("abcde")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: true) == .write(Self.line("abcde"), dropped: 0))
        // A line over the capacity into an empty queue: the sleeping writer is woken to report it.
        var full = LogLineQueue(capacity: 3)
        #expect(full.next(flushDue: false) == .sleep)
        #expect(full.enqueue(Self.line("long")) == .dropped(wakeWriter: true))
        #expect(full.next(flushDue: false) == .write([], dropped: 1))
        #expect(full.next(flushDue: false) == .sleep)
    }

    @Test("close: a sleeping or gathering writer is woken, writes what is queued, then finishes; later lines are the caller's to write")
    func closeDrainsThenFinishes() {
        var queue = LogLineQueue(capacity: 100)
        #expect(queue.next(flushDue: false) == .sleep)
        #expect(queue.close() == true)
        #expect(queue.enqueue(Self.line("last")) == .queued(wakeWriter: false))
        #expect(queue.next(flushDue: false) == .write(Self.line("last"), dropped: 0))
        #expect(queue.next(flushDue: false) == .finish)
        #expect(queue.enqueue(Self.line("after")) == .closed)
        #expect(queue.next(flushDue: false) == .finish)

        var gathering = LogLineQueue(capacity: 100)
        #expect(gathering.enqueue(Self.line("x")) == .queued(wakeWriter: false))
        #expect(gathering.next(flushDue: false) == .gather)
        #expect(gathering.close() == true)
        #expect(gathering.next(flushDue: false) == .write(Self.line("x"), dropped: 0))
        #expect(gathering.next(flushDue: false) == .finish)

        // A writer busy writing needs no wake-up: it sees the close on its next step.
        var busy = LogLineQueue(capacity: 100)
        #expect(busy.enqueue(Self.line("x")) == .queued(wakeWriter: false))
        #expect(busy.close() == false)
        #expect(busy.next(flushDue: false) == .write(Self.line("x"), dropped: 0))
        #expect(busy.next(flushDue: false) == .finish)
    }
}
