import Logging
import NIOCore
import NIOEmbedded
import NIOSSL
import NIOWebSocket
import Testing

@testable import AuthGateHTTP

/// The two relays of a tunnel on embedded channels (one loop, WebSocket framing on each side):
/// how a side's end reaches the other, byte for byte.
@Suite("WebSocket relay")
struct WebSocketRelayHandlerTests {
    /// A built tunnel: each channel has NIO's frame decoder and encoder and its relay, both ready.
    struct Tunnel {
        let client: EmbeddedChannel
        let upstream: EmbeddedChannel

        init() throws {
            let loop = EmbeddedEventLoop()
            let (clientRelay, upstreamRelay) = WebSocketRelayHandler.pair(watch: nil, logger: Logger(label: "relay-test"))
            func channel(_ relay: WebSocketRelayHandler) throws -> EmbeddedChannel {
                let channel = EmbeddedChannel(loop: loop)
                try channel.pipeline.syncOperations.addHandlers(relay.framing(maxFrame: 1 << 20))
                try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
                return channel
            }
            client = try channel(clientRelay)
            upstream = try channel(upstreamRelay)
            clientRelay.becameReady()
            upstreamRelay.becameReady()
        }

        /// Every byte written to `channel` so far.
        static func written(_ channel: EmbeddedChannel) throws -> [UInt8] {
            var bytes: [UInt8] = []
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
            return bytes
        }
    }

    /// A TLS peer that sends its close frame and then closes its TCP connection without
    /// `close_notify` (as browsers and many servers do): NIOSSL reports `uncleanShutdown`, then
    /// the end of input. The relay took that report for a frame error and sent the other side
    /// 1001 after the close frame it had just relayed: two close frames, the second a lie. Now the
    /// other side gets the one close frame, then the close of its connection.
    @Test(
        "a TLS peer's close frame, then a FIN without close_notify: the other side gets that close frame alone, then the close",
        arguments: [false, true])
    func uncleanShutdownAfterClose(fromClient: Bool) throws {
        let tunnel = try Tunnel()
        let (sender, receiver) = fromClient ? (tunnel.client, tunnel.upstream) : (tunnel.upstream, tunnel.client)
        // 4001 "bye": a client's frame is masked (key 1 2 3 4), a server's is not.
        let payload: [UInt8] = [0x0F, 0xA1] + Array("bye".utf8)
        let key: [UInt8] = [1, 2, 3, 4]
        let frame: [UInt8] =
            fromClient
            ? [0x88, 0x80 | UInt8(payload.count)] + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
            : [0x88, UInt8(payload.count)] + payload
        try sender.writeInbound(ByteBuffer(bytes: frame))
        sender.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        sender.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        sender.embeddedEventLoop.run()
        #expect(try Tunnel.written(receiver) == frame, "the close frame as it came, and nothing after it")
        #expect(!receiver.isActive, "the other side's connection is closed")
        #expect(!sender.isActive, "the side that ended is closed")
        #expect(try Tunnel.written(sender).isEmpty, "no close frame back to a side that has stopped sending")
    }

    /// What can end a tunnel after the upstream's close frame was relayed to the client, before
    /// the client answered it.
    enum LaterEnd: String, CaseIterable, CustomTestStringConvertible {
        case shutdown, oversizedFrame, oversizedFrameInTheSameRead, revokedSession
        var testDescription: String { rawValue }
    }

    /// The client has been relayed the upstream's close frame; then graceful shutdown begins, the
    /// upstream sends a frame over the limit, or the caller's session ends. Each ended the client with a close frame of its
    /// own (1001, or 1008 for the session)  after the one relayed: two close
    /// frames, where RFC 6455 allows nothing after the first. The client now gets the one close
    /// frame and the close of its connection; the upstream, which was sent none, still gets one.
    @Test("after a close frame relayed to a side, what ends the tunnel next sends that side no second close frame", arguments: LaterEnd.allCases)
    func oneCloseFramePerSide(_ later: LaterEnd) throws {
        let tunnel = try Tunnel()
        let close: [UInt8] = [0x88, 5, 0x0F, 0xA1] + Array("bye".utf8)
        // A binary frame announcing 2 MiB, over the rig's 1 MiB limit.
        let oversized: [UInt8] = [0x82, 127, 0, 0, 0, 0, 0, 0x20, 0, 0]
        if later == .oversizedFrameInTheSameRead {
            // The close frame is relayed, unflushed, when the next frame ends the tunnel: it must
            // still be written before the client's connection closes.
            try? tunnel.upstream.writeInbound(ByteBuffer(bytes: close + oversized))
        } else {
            try tunnel.upstream.writeInbound(ByteBuffer(bytes: close))
        }
        switch later {
        case .shutdown:
            tunnel.client.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case .oversizedFrame:
            try? tunnel.upstream.writeInbound(ByteBuffer(bytes: oversized))
        case .oversizedFrameInTheSameRead:
            break
        case .revokedSession:
            // What the session watch does once the caller's session has ended.
            let relay = try tunnel.client.pipeline.syncOperations.handler(type: WebSocketRelayHandler.self)
            relay.end(.policyViolation, reason: "session revoked", peerCode: .goingAway)
        }
        tunnel.client.embeddedEventLoop.run()
        #expect(try Tunnel.written(tunnel.client) == close, "the upstream's close frame alone")
        #expect(!tunnel.client.isActive)
        let toUpstream = try Tunnel.written(tunnel.upstream)
        #expect(toUpstream.prefix(2).elementsEqual([0x88, 0x82]), "one masked close frame with a code: \(toUpstream)")
        #expect(toUpstream.count == 8, "\(toUpstream)")
    }

    /// A side that goes on sending after its close frame (RFC 6455 §5.5.1 forbids it): the
    /// frames after the close are not relayed, in the same read or a later one.
    @Test("frames a side sends after its close frame are not relayed", arguments: [false, true])
    func nothingAfterClose(sameRead: Bool) throws {
        let tunnel = try Tunnel()
        let key: [UInt8] = [9, 8, 7, 6]
        func masked(_ opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [0x80 | opcode, 0x80 | UInt8(payload.count)] + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        }
        let close = masked(0x8, [0x03, 0xE8])
        let after = masked(0x1, Array("late".utf8)) + masked(0x9, [])
        if sameRead {
            try tunnel.client.writeInbound(ByteBuffer(bytes: close + after))
        } else {
            try tunnel.client.writeInbound(ByteBuffer(bytes: close))
            try tunnel.client.writeInbound(ByteBuffer(bytes: after))
        }
        #expect(try Tunnel.written(tunnel.upstream) == close, "the close frame, and nothing after it")
        #expect(tunnel.upstream.isActive, "the upstream's answer to the close is still relayed")
        try tunnel.upstream.writeInbound(ByteBuffer(bytes: [0x88, 2, 0x03, 0xE8]))
        #expect(try Tunnel.written(tunnel.client) == [0x88, 2, 0x03, 0xE8])
    }

    /// A FIN without a close frame first (TLS without `close_notify`, or plain TCP) still ends the
    /// tunnel as "going away" for the other side.
    @Test("a FIN without a close frame, TLS report or not: the other side gets 1001, then the close", arguments: [false, true])
    func finWithoutClose(unclean: Bool) throws {
        let tunnel = try Tunnel()
        if unclean { tunnel.upstream.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown) }
        tunnel.upstream.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        tunnel.upstream.embeddedEventLoop.run()
        #expect(try Tunnel.written(tunnel.client) == [0x88, 2, 0x03, 0xE9])
        #expect(!tunnel.client.isActive && !tunnel.upstream.isActive)
    }
}
