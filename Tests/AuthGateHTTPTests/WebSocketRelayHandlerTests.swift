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
            _ = try? tunnel.upstream.writeInbound(ByteBuffer(bytes: close + oversized))
        } else {
            try tunnel.upstream.writeInbound(ByteBuffer(bytes: close))
        }
        switch later {
        case .shutdown:
            tunnel.client.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case .oversizedFrame:
            _ = try? tunnel.upstream.writeInbound(ByteBuffer(bytes: oversized))
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

    /// A frame the protocol forbids, from either side. The relay copied frames as they came: an
    /// unmasked frame from a client reached the upstream re-masked as if valid, a masked one from
    /// the upstream reached the client unmasked, a reserved opcode or a broken close body went on
    /// to the other end, which then had to guard against the gateway. Now the sender gets 1002
    /// (1007 for a close reason that is not UTF-8), the other side 1001, and nothing is relayed.
    enum Forbidden: String, CaseIterable, CustomTestStringConvertible {
        case unmaskedFromClient, maskedFromUpstream, reservedOpcode, reservedControlOpcode, oneByteCloseBody, closeCode1005
        case closeCode999, closeCode2000, closeReasonNotUTF8
        var testDescription: String { rawValue }

        /// Which side sends it, the frame's first byte, its payload, whether it is masked, and the
        /// code the sender must get.
        var frame: (fromClient: Bool, head: UInt8, payload: [UInt8], masked: Bool, code: [UInt8]) {
            switch self {
            case .unmaskedFromClient: (true, 0x81, Array("hi".utf8), false, [0x03, 0xEA])
            case .maskedFromUpstream: (false, 0x81, Array("hi".utf8), true, [0x03, 0xEA])
            case .reservedOpcode: (true, 0x83, [1], true, [0x03, 0xEA])
            case .reservedControlOpcode: (false, 0x8B, [], false, [0x03, 0xEA])
            case .oneByteCloseBody: (true, 0x88, [0x03], true, [0x03, 0xEA])
            case .closeCode1005: (false, 0x88, [0x03, 0xED], false, [0x03, 0xEA])
            case .closeCode999: (true, 0x88, [0x03, 0xE7], true, [0x03, 0xEA])
            case .closeCode2000: (false, 0x88, [0x07, 0xD0], false, [0x03, 0xEA])
            case .closeReasonNotUTF8: (true, 0x88, [0x03, 0xE8, 0xC3, 0x28], true, [0x03, 0xEF])
            }
        }
    }

    @Test("a frame the protocol forbids is not relayed: its sender gets 1002 (or 1007), the other side 1001", arguments: Forbidden.allCases)
    func forbiddenFrames(_ forbidden: Forbidden) throws {
        let tunnel = try Tunnel()
        let (fromClient, head, payload, masked, code) = forbidden.frame
        let (sender, receiver) = fromClient ? (tunnel.client, tunnel.upstream) : (tunnel.upstream, tunnel.client)
        let key: [UInt8] = [5, 6, 7, 8]
        let bytes: [UInt8] =
            masked
            ? [head, 0x80 | UInt8(payload.count)] + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
            : [head, UInt8(payload.count)] + payload
        try sender.writeInbound(ByteBuffer(bytes: bytes))
        sender.embeddedEventLoop.run()
        let toSender = try Tunnel.written(sender)
        // A close frame to the client is unmasked; to the upstream masked (4 key bytes before the code).
        let senderCode = fromClient ? Array(toSender.dropFirst(2).prefix(2)) : Self.unmasked(toSender)
        #expect(senderCode == code, "\(forbidden): the sender got \(toSender)")
        let toReceiver = try Tunnel.written(receiver)
        let receiverCode = fromClient ? Self.unmasked(toReceiver) : Array(toReceiver.dropFirst(2).prefix(2))
        #expect(receiverCode == [0x03, 0xE9], "\(forbidden): the other side got \(toReceiver), not 1001 alone")
        #expect(toReceiver.count == (fromClient ? 8 : 4), "nothing but the close frame reached the other side: \(toReceiver)")
        #expect(!sender.isActive && !receiver.isActive)
    }

    @Test("frames the protocol allows pass as they are: masked from the client, unmasked from the upstream, valid close codes")
    func allowedFrames() throws {
        let tunnel = try Tunnel()
        let key: [UInt8] = [1, 1, 1, 1]
        let text = [0x81, 0x82] + key + [UInt8(ascii: "h") ^ 1, UInt8(ascii: "i") ^ 1]
        try tunnel.client.writeInbound(ByteBuffer(bytes: text))
        #expect(try Tunnel.written(tunnel.upstream) == text, "a masked frame keeps its key")
        let pong: [UInt8] = [0x8A, 0]
        try tunnel.upstream.writeInbound(ByteBuffer(bytes: pong))
        #expect(try Tunnel.written(tunnel.client) == pong)
        // 4000 with a UTF-8 reason: a private-use code.
        let close: [UInt8] = [0x88, 6, 0x0F, 0xA0] + Array("ok".utf8) + [0xC3, 0xA9]
        try tunnel.upstream.writeInbound(ByteBuffer(bytes: close))
        #expect(try Tunnel.written(tunnel.client) == close)
        for code: UInt16 in [1000, 1003, 1007, 1014, 3000, 4999] { #expect(WebSocketFrameRules.isSendable(code)) }
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000] { #expect(!WebSocketFrameRules.isSendable(code)) }
    }

    /// The two code bytes of a masked close frame (2 head bytes, 4 key bytes, then the code).
    static func unmasked(_ frame: [UInt8]) -> [UInt8] {
        guard frame.count >= 8 else { return frame }
        return [frame[6] ^ frame[2], frame[7] ^ frame[3]]
    }
}
