import NIOCore
import NIOEmbedded
import NIOSSL
import Testing

@testable import AuthGateHTTP

/// The gate in front of a tunnel upstream's HTTP decoder, on an embedded channel: what reaches the
/// handler behind it, and when.
@Suite("Upstream end-of-input gate")
struct UpstreamEndOfInputGateTests {
    /// Records, in order, what reaches the end of the pipeline.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var seen: [String] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            seen.append("bytes:" + String(buffer: unwrapInboundIn(data)))
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            seen.append(event as? ChannelEvent == .inputClosed ? "end" : "event")
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            seen.append((error as? NIOSSLError).map { "\($0)" } ?? "error")
        }
    }

    private func rig() throws -> (EmbeddedChannel, UpstreamEndOfInputGate, Recorder) {
        let gate = UpstreamEndOfInputGate()
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([gate, recorder])
        return (channel, gate, recorder)
    }

    @Test("before the 101 everything passes: bytes, the end of input, errors")
    func open() throws {
        let (channel, _, recorder) = try rig()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 403"))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        #expect(recorder.seen == ["bytes:HTTP/1.1 403", "end", "uncleanShutdown"])
    }

    @Test("held: bytes pass, the end of input (and an unclean TLS shutdown) wait; released, the end follows, once")
    func holdsUntilReleased() throws {
        let (channel, gate, recorder) = try rig()
        gate.hold()
        try channel.writeInbound(ByteBuffer(string: "close frame"))
        channel.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.outputClosed)
        #expect(recorder.seen == ["bytes:close frame", "event"], "only the end of input and the unclean shutdown wait")
        gate.release()
        #expect(recorder.seen == ["bytes:close frame", "event", "end"])
        gate.release()
        gate.hold()
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(recorder.seen == ["bytes:close frame", "event", "end", "end"], "after the release it passes; no second hold")
    }

    @Test("released with no end of input: nothing is invented, and a later end passes")
    func releaseWithoutEnd() throws {
        let (channel, gate, recorder) = try rig()
        gate.hold()
        channel.pipeline.fireErrorCaught(ChannelError.ioOnClosedChannel)
        gate.release()
        #expect(recorder.seen == ["error"], "other errors are never held")
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(recorder.seen == ["error", "end"])
    }
}
