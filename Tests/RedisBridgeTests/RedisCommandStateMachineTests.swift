import NIOCore
import Testing

@testable import RedisBridge

@Suite("Redis command state machine", .timeLimit(.minutes(3)))
struct RedisCommandStateMachineTests {
    private let now = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test("replies complete commands in the order they were sent")
    func repliesInOrder() {
        var machine = RedisCommandStateMachine<Int>()
        for id in 1...3 { _ = machine.sendCommand(id, deadline: now + .seconds(1)) }
        for (id, reply) in zip(1...3, ["a", "b", "c"]) {
            guard case .succeed(let pending, .simpleString(let text)) = machine.receivedReply(.simpleString(reply)) else {
                Issue.record("expected success for \(id)")
                return
            }
            #expect(pending == id)
            #expect(text == reply)
        }
        #expect(machine.pendingCount == 0)
    }

    @Test("only an earlier deadline re-arms the timer")
    func timerArming() {
        var machine = RedisCommandStateMachine<Int>()
        guard case .write(let first) = machine.sendCommand(1, deadline: now + .seconds(2)) else { Issue.record("not written"); return }
        #expect(first == now + .seconds(2))
        guard case .write(let second) = machine.sendCommand(2, deadline: now + .seconds(3)) else { Issue.record("not written"); return }
        #expect(second == nil)
        guard case .write(let third) = machine.sendCommand(3, deadline: now + .seconds(1)) else { Issue.record("not written"); return }
        #expect(third == now + .seconds(1))
    }

    @Test("an overdue command fails every pending command and closes")
    func deadlineFailsAll() {
        var machine = RedisCommandStateMachine<Int>()
        _ = machine.sendCommand(1, deadline: now + .seconds(5))
        _ = machine.sendCommand(2, deadline: now + .seconds(1))
        guard case .failAllAndClose(let pending, let error) = machine.timerFired(now: now + .seconds(2)) else {
            Issue.record("expected failAllAndClose")
            return
        }
        #expect(pending == [1, 2])
        #expect(error.code == .timeout)
        guard case .fail(_, let later) = machine.sendCommand(3, deadline: now + .seconds(9)) else {
            Issue.record("a closed connection must refuse commands")
            return
        }
        #expect(later.code == .timeout)
    }

    @Test("a timer with nothing overdue re-arms for the earliest deadline")
    func timerReschedules() {
        var machine = RedisCommandStateMachine<Int>()
        _ = machine.sendCommand(1, deadline: now + .seconds(1))
        _ = machine.sendCommand(2, deadline: now + .seconds(4))
        _ = machine.receivedReply(.integer(1))
        guard case .reschedule(let next) = machine.timerFired(now: now + .seconds(2)) else {
            Issue.record("expected reschedule")
            return
        }
        #expect(next == now + .seconds(4))
        _ = machine.receivedReply(.integer(2))
        guard case .none = machine.timerFired(now: now + .seconds(5)) else {
            Issue.record("nothing waits, nothing to do")
            return
        }
    }

    @Test("a reply nobody asked for is a protocol error")
    func unexpectedReply() {
        var machine = RedisCommandStateMachine<Int>()
        guard case .failAllAndClose(let pending, let error) = machine.receivedReply(.simpleString("OK")) else {
            Issue.record("expected failAllAndClose")
            return
        }
        #expect(pending.isEmpty)
        #expect(error.code == .protocolError)
    }

    @Test("once subscribed, a reply nobody asked for is a pushed message; the SUBSCRIBE reply still completes its command")
    func pushes() {
        var machine = RedisCommandStateMachine<Int>()
        machine.acceptPushes()
        _ = machine.sendCommand(1, deadline: now + .seconds(1))
        guard case .succeed(1, _) = machine.receivedReply(.array([.bulkString(ByteBuffer(string: "subscribe"))])) else {
            Issue.record("the SUBSCRIBE reply must complete its command")
            return
        }
        for _ in 0..<3 {
            guard case .push(.simpleString("m")) = machine.receivedReply(.simpleString("m")) else {
                Issue.record("expected a push")
                return
            }
        }
        #expect(machine.pendingCount == 0)
    }

    @Test("graceful close drains pending replies, then closes and refuses new commands")
    func gracefulDrain() {
        var machine = RedisCommandStateMachine<Int>()
        _ = machine.sendCommand(1, deadline: now + .seconds(1))
        _ = machine.sendCommand(2, deadline: now + .seconds(1))
        guard case .waitForDrain = machine.gracefulClose() else { Issue.record("must wait for drain"); return }
        guard case .fail(let refused, let error) = machine.sendCommand(3, deadline: now + .seconds(1)) else {
            Issue.record("draining must refuse commands")
            return
        }
        #expect(refused == 3)
        #expect(error.code == .connectionClosed)
        guard case .succeed(1, _) = machine.receivedReply(.integer(1)) else { Issue.record("first reply"); return }
        guard case .succeedAndClose(2, _) = machine.receivedReply(.integer(2)) else { Issue.record("last reply closes"); return }
    }

    @Test("graceful close of an idle connection closes now")
    func gracefulCloseIdle() {
        var machine = RedisCommandStateMachine<Int>()
        guard case .closeNow = machine.gracefulClose() else { Issue.record("idle closes now"); return }
    }

    @Test("the socket closing fails whatever is pending")
    func inactiveFailsPending() {
        var machine = RedisCommandStateMachine<Int>()
        _ = machine.sendCommand(1, deadline: now + .seconds(1))
        _ = machine.sendCommand(2, deadline: now + .seconds(1))
        #expect(machine.channelInactive() == [1, 2])
        #expect(machine.pendingCount == 0)
    }
}
