import NIOCore
import NIOEmbedded
import Testing

@testable import AuthGateHTTP

/// Flushes of an HTTP/2 connection gathered into one per pass of the loop, on an embedded channel.
@Suite("HTTP/2 flush batcher")
struct HTTP2FlushBatcherTests {
    @Test("writes flushed several times in one pass go out together, once the loop's tasks have run")
    func onePerPass() throws {
        let channel = EmbeddedChannel(handler: HTTP2FlushBatcher())
        for answer in ["one", "two", "three"] {
            channel.write(ByteBuffer(string: answer), promise: nil)
            channel.flush()
        }
        // Nothing has reached the socket yet: the flush waits for the loop's pass.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "one"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "two"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "three"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)

        // A later flush is scheduled again.
        channel.write(ByteBuffer(string: "four"), promise: nil)
        channel.flush()
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "four"))
        _ = try channel.finish()
    }

    @Test("a close sends what is waiting first (a GOAWAY written just before it is not lost)")
    func closeFlushesFirst() throws {
        let channel = EmbeddedChannel(handler: HTTP2FlushBatcher())
        // Connected, so that the close shows: an embedded channel never connected is never active.
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let activeBefore = channel.isActive
        #expect(activeBefore)
        channel.write(ByteBuffer(string: "goaway"), promise: nil)
        channel.flush()
        let closed = channel.close()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "goaway"))
        channel.embeddedEventLoop.run()
        try closed.wait()
        // A Bool apart from the channel: a failed expectation would describe the channel, and NIO's
        // description of an embedded pipeline traps.
        let activeAfter = channel.isActive
        #expect(!activeAfter)
    }
}
