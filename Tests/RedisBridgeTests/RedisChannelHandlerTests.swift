import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import RedisBridge

@Suite("Redis channel handler on NIOAsyncTestingChannel", .timeLimit(.minutes(3)))
struct RedisChannelHandlerTests {
    private func makeChannel(maxReplyBytes: Int = 1 << 20) async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(
                RedisChannelHandler(maxReplyBytes: maxReplyBytes, closeReason: RedisCloseReason(), logger: .init(label: "test")))
        }.get()
        try await channel.connect(to: .init(ipAddress: "127.0.0.1", port: 6379))
        return channel
    }

    private func send(_ command: RedisCommand, on channel: NIOAsyncTestingChannel, timeout: TimeAmount = .seconds(5))
        -> EventLoopFuture<RESPValue>
    {
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        channel.writeAndFlush(
            RedisRequest(encodedCommand: command.encoded(), promise: promise, deadline: channel.eventLoop.now + timeout), promise: nil)
        return promise.futureResult
    }

    @Test("writes the encoded command and completes with the reply split across reads")
    func splitReply() async throws {
        let channel = try await makeChannel()
        let reply = send(RedisCommand("GET", "k"), on: channel)
        let written = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        #expect(String(buffer: written) == "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
        try await channel.writeInbound(ByteBuffer(string: "$5\r\nhel"))
        try await channel.writeInbound(ByteBuffer(string: "lo\r\n"))
        #expect(try await reply.get() == .bulkString(ByteBuffer(string: "hello")))
        _ = try? await channel.finish()
    }

    @Test("pipelined replies in one read complete pipelined commands in order")
    func pipelined() async throws {
        let channel = try await makeChannel()
        let replies = (0..<5).map { send(RedisCommand("INCR", .string("k\($0)")), on: channel) }
        try await channel.writeInbound(ByteBuffer(string: ":1\r\n:2\r\n:3\r\n:4\r\n:5\r\n"))
        for (index, reply) in replies.enumerated() {
            #expect(try await reply.get() == .integer(Int64(index + 1)))
        }
        _ = try? await channel.finish()
    }

    @Test("an error reply reaches its command as a value; the connection stays usable")
    func errorReply() async throws {
        let channel = try await makeChannel()
        let first = send(RedisCommand("INCR", "text"), on: channel)
        let second = send(RedisCommand("PING"), on: channel)
        try await channel.writeInbound(ByteBuffer(string: "-ERR value is not an integer or out of range\r\n+PONG\r\n"))
        #expect(try await first.get() == .error("ERR value is not an integer or out of range"))
        #expect(try await second.get() == .simpleString("PONG"))
        #expect(channel.isActive)
        _ = try? await channel.finish()
    }

    @Test("nested arrays arrive whole")
    func nested() async throws {
        let channel = try await makeChannel()
        let reply = send(RedisCommand("XREAD", "STREAMS", "s", "0"), on: channel)
        try await channel.writeInbound(ByteBuffer(string: "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"))
        let entries = try RedisStreamReader.entries(inStream: "s", from: try await reply.get())
        #expect(entries == [RedisStreamEntry(id: "1-0", fields: [.init(name: "f", value: ByteBuffer(string: "v"))])])
        _ = try? await channel.finish()
    }

    @Test("an oversized reply fails every pending command and closes the connection")
    func oversized() async throws {
        let channel = try await makeChannel(maxReplyBytes: 32)
        let first = send(RedisCommand("GET", "big"), on: channel)
        let second = send(RedisCommand("PING"), on: channel)
        try await channel.writeInbound(ByteBuffer(string: "$100\r\n" + String(repeating: "x", count: 40)))
        await #expect { try await first.get() } throws: { ($0 as? RedisError)?.code == .replyTooLarge }
        await #expect { try await second.get() } throws: { ($0 as? RedisError)?.code == .replyTooLarge }
        try await channel.closeFuture.get()
    }

    @Test("a protocol error fails pending commands and closes")
    func protocolError() async throws {
        let channel = try await makeChannel()
        let reply = send(RedisCommand("PING"), on: channel)
        try await channel.writeInbound(ByteBuffer(string: "!bogus\r\n"))
        await #expect { try await reply.get() } throws: { ($0 as? RedisError)?.code == .protocolError }
        try await channel.closeFuture.get()
    }

    @Test("a command past its deadline fails with timeout and closes the connection")
    func deadline() async throws {
        let channel = try await makeChannel()
        let reply = send(RedisCommand("BLPOP", "q", "0"), on: channel, timeout: .milliseconds(50))
        await channel.testingEventLoop.advanceTime(by: .milliseconds(49))
        #expect(channel.isActive)
        await channel.testingEventLoop.advanceTime(by: .milliseconds(1))
        await #expect { try await reply.get() } throws: { ($0 as? RedisError)?.code == .timeout }
        try await channel.closeFuture.get()
    }

    /// A caller woken by its command's failure may send its next command at once, from another
    /// thread, before the loop has closed the socket (a TLS handler even holds the close for its
    /// `close_notify`): the connection must already say it is closing, or the client hands the
    /// caller the same connection and the command fails with connection_closed (seen as a rare
    /// failure of "a command past its deadline fails fast with timeout, and the client recovers").
    @Test("a caller a deadline or an error wakes up finds the connection closing, before the socket has closed", arguments: [false, true])
    func closingBeforeCallersHear(byError: Bool) async throws {
        let closeReason = RedisCloseReason()
        let channel = NIOAsyncTestingChannel()
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(
                RedisChannelHandler(maxReplyBytes: 32, closeReason: closeReason, logger: .init(label: "test")))
        }.get()
        try await channel.connect(to: .init(ipAddress: "127.0.0.1", port: 6379))
        let reply = send(RedisCommand("BLPOP", "q", "0"), on: channel, timeout: .milliseconds(50))
        #expect(!closeReason.isClosing)
        // Runs as the promise fails, as the woken caller would.
        final class Seen: Sendable { let closing = Mutex<Bool?>(nil) }
        let seen = Seen()
        reply.whenFailure { _ in seen.closing.withLock { $0 = closeReason.isClosing } }
        if byError {
            _ = try? await channel.writeInbound(ByteBuffer(string: "$100\r\n" + String(repeating: "x", count: 40)))
        } else {
            await channel.testingEventLoop.advanceTime(by: .milliseconds(50))
        }
        await #expect { try await reply.get() } throws: { ($0 as? RedisError)?.code == (byError ? .replyTooLarge : .timeout) }
        #expect(seen.closing.withLock { $0 } == true)
        try await channel.closeFuture.get()
    }

    @Test("graceful close waits for pending replies")
    func gracefulClose() async throws {
        let channel = try await makeChannel()
        let reply = send(RedisCommand("PING"), on: channel)
        try await channel.triggerUserOutboundEvent(RedisGracefulCloseEvent())
        #expect(channel.isActive)
        let refused = send(RedisCommand("PING"), on: channel)
        await #expect { try await refused.get() } throws: { ($0 as? RedisError)?.code == .connectionClosed }
        try await channel.writeInbound(ByteBuffer(string: "+PONG\r\n"))
        #expect(try await reply.get() == .simpleString("PONG"))
        try await channel.closeFuture.get()
    }

    @Test("the connection closing fails pending commands with connection_closed")
    func closedFailsPending() async throws {
        let channel = try await makeChannel()
        let reply = send(RedisCommand("PING"), on: channel)
        try await channel.close()
        await #expect { try await reply.get() } throws: { ($0 as? RedisError)?.code == .connectionClosed }
    }
}
