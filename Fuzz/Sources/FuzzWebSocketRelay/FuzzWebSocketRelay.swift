import FuzzSupport
import Logging
import NIOCore
import NIOEmbedded
import NIOSSL
import NIOWebSocket

@testable import AuthGateHTTP

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzWebSocketRelay_main")
public func fuzzWebSocketRelayMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzWebSocketRelay(data, size) }
}

/// A WebSocket tunnel's two relays (``WebSocketRelayHandler``, NIO's frame decoder and encoder
/// on each side, one embedded loop) driven by a script of what either side can do: send a frame
/// (any opcode, fragment bit, masked or not), send raw bytes, stop sending (a FIN), end TLS
/// without `close_notify`, reset; and what the gateway can do: begin graceful shutdown, end the
/// caller's session.
///
/// Properties: never a trap; what the gateway writes to each side parses as whole frames, masked
/// toward the upstream and unmasked toward the client (RFC 6455 §5.3), no reserved opcode, no
/// close frame with a body the protocol forbids (``WebSocketFrameRules``), with one close frame at
/// most and nothing after it (§5.5.1).
public func fuzzWebSocketRelay(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let tunnel = RelayFixture()
    var steps = 0
    while steps < 64, let step = input.step() {
        steps += 1
        let channel = step.fromClient ? tunnel.client : tunnel.upstream
        switch step.action % 8 {
        case 0: _ = try? channel.writeInbound(ByteBuffer(bytes: RelayFixture.frame(from: &input, masked: step.fromClient)))
        case 1: _ = try? channel.writeInbound(ByteBuffer(bytes: input.field().prefix(512)))
        case 2: channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        case 3: channel.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        case 4: tunnel.client.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case 5: tunnel.clientRelay.end(.policyViolation, reason: "session ended", peerCode: .goingAway)
        case 6: _ = channel.close()
        default: tunnel.loop.run()
        }
        tunnel.collect()
    }
    tunnel.loop.run()
    tunnel.collect()
    RelayFixture.check(tunnel.toClient, masked: false, side: "client")
    RelayFixture.check(tunnel.toUpstream, masked: true, side: "upstream")
    return 0
}

extension FuzzInput {
    /// One step of the script: an action and the side it concerns; nil when the input is used up.
    fileprivate mutating func step() -> (action: UInt8, fromClient: Bool)? {
        guard !isEmpty else { return nil }
        let byte = byte()
        return (byte & 0x7F, byte & 0x80 != 0)
    }
}

/// A built tunnel on embedded channels and what the gateway wrote to each side.
final class RelayFixture {
    let loop = EmbeddedEventLoop()
    let client: EmbeddedChannel
    let upstream: EmbeddedChannel
    let clientRelay: WebSocketRelayHandler
    var toClient: [UInt8] = []
    var toUpstream: [UInt8] = []

    init() {
        let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let upstreamRelay: WebSocketRelayHandler
        (clientRelay, upstreamRelay) = WebSocketRelayHandler.pair(watch: nil, logger: logger)
        client = Self.channel(clientRelay, loop: loop)
        upstream = Self.channel(upstreamRelay, loop: loop)
        clientRelay.becameReady()
        upstreamRelay.becameReady()
    }

    private static func channel(_ relay: WebSocketRelayHandler, loop: EmbeddedEventLoop) -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        do {
            try channel.pipeline.syncOperations.addHandlers(relay.framing(maxFrame: 256))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        } catch {
            fuzzCheck(false, "the fixture could not be built: \(error)")
        }
        return channel
    }

    /// Moves what the gateway wrote to each side into ``toClient`` and ``toUpstream``.
    func collect() {
        while let buffer = try? client.readOutbound(as: ByteBuffer.self) { toClient += buffer.readableBytesView }
        while let buffer = try? upstream.readOutbound(as: ByteBuffer.self) { toUpstream += buffer.readableBytesView }
    }

    /// A frame from the input: opcode (reserved ones too) and fragment bit, a payload of up to
    /// 300 bytes (over the fixture's 256-byte limit at times), masked as a client's when
    /// `clientSide`, except when the control byte asks for the other way (a frame the protocol
    /// forbids).
    static func frame(from input: inout FuzzInput, masked clientSide: Bool) -> [UInt8] {
        let control = input.byte()
        let opcodes: [UInt8] = [0x0, 0x1, 0x2, 0x8, 0x9, 0xA, 0x3, 0xB]
        let first = (control & 0x80) | opcodes[Int(control & 0x7F) % opcodes.count]
        let masked = clientSide != (control & 0x30 == 0x30)
        let length = Int(input.byte()) + (control & 0x40 != 0 ? 45 : 0)
        var payload: [UInt8] = []
        for _ in 0..<length { payload.append(input.byte()) }
        var frame: [UInt8] = [first]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            frame.append(maskBit | UInt8(length))
        } else {
            frame += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        }
        guard masked else { return frame + payload }
        let key = [input.byte(), input.byte(), input.byte(), input.byte()]
        return frame + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    /// `bytes` are whole frames, each masked when `masked`, with one close frame at most, last.
    static func check(_ bytes: [UInt8], masked: Bool, side: String) {
        var index = 0
        var closes = 0
        while index < bytes.count {
            fuzzCheck(closes == 0, "a frame to the \(side) after a close frame: \(bytes)")
            fuzzCheck(bytes.count - index >= 2, "a partial frame header to the \(side): \(bytes)")
            let opcode = bytes[index] & 0x0F
            let isMasked = bytes[index + 1] & 0x80 != 0
            fuzzCheck(isMasked == masked, "a frame to the \(side) \(isMasked ? "masked" : "unmasked"): \(bytes)")
            var length = Int(bytes[index + 1] & 0x7F)
            index += 2
            if length == 126 {
                fuzzCheck(bytes.count - index >= 2, "a partial length to the \(side): \(bytes)")
                length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
                index += 2
            } else if length == 127 {
                fuzzCheck(bytes.count - index >= 8, "a partial length to the \(side): \(bytes)")
                length = bytes[index..<index + 8].reduce(0) { ($0 << 8) | Int($1) }
                index += 8
            }
            let key: [UInt8] = isMasked && bytes.count - index >= 4 ? Array(bytes[index..<index + 4]) : []
            index += isMasked ? 4 : 0
            fuzzCheck(length >= 0 && length <= bytes.count - index, "a partial frame to the \(side): \(bytes)")
            fuzzCheck([0x0, 0x1, 0x2, 0x8, 0x9, 0xA].contains(opcode), "a reserved opcode to the \(side): \(bytes)")
            if opcode == 0x8 {
                let body = bytes[index..<index + length].enumerated().map { key.isEmpty ? $0.element : $0.element ^ key[$0.offset % 4] }
                fuzzCheck(
                    WebSocketFrameRules.closeBodyViolation(ByteBuffer(bytes: body)) == nil,
                    "a close frame the protocol forbids to the \(side): \(bytes)")
            }
            index += length
            if opcode == 0x8 { closes += 1 }
        }
    }
}
