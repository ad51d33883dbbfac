import NIOCore
import NIOWebSocket

/// What RFC 6455 requires of a frame before the relay passes it on, beyond what NIO's decoder
/// already refuses (frames over the limit, fragmented or long control frames): frames from a
/// client are masked and frames from a server are not (§5.1); the opcode is one the protocol
/// defines (§5.2: the others are reserved); a close frame's body is empty or a valid code
/// (§7.4: not 1004-1006, 1015 or an unassigned one) with a UTF-8 reason (§5.5.1). A frame that
/// breaks one ends the tunnel instead of reaching the other end, so the gateway never sends a
/// frame the protocol forbids (an upstream behind it need not guard against them). Extension bits
/// pass: the two ends may have agreed on an extension.
enum WebSocketFrameRules {
    /// The close code to end the sending side with when `frame` breaks a rule; nil when it may pass.
    static func violation(of frame: WebSocketFrame, from side: WebSocketRelayHandler.Side) -> WebSocketErrorCode? {
        if (frame.maskKey != nil) != (side == .client) { return .protocolError }
        switch frame.opcode {
        case .continuation, .text, .binary, .ping, .pong:
            return nil
        case .connectionClose:
            return closeBodyViolation(frame.unmaskedData)
        default:
            return .protocolError
        }
    }

    /// A close frame's body: empty, or two bytes of a code a peer may send and a UTF-8 reason.
    static func closeBodyViolation(_ body: ByteBuffer) -> WebSocketErrorCode? {
        guard body.readableBytes > 0 else { return nil }
        guard body.readableBytes >= 2, let code = body.getInteger(at: body.readerIndex, as: UInt16.self) else { return .protocolError }
        guard isSendable(code) else { return .protocolError }
        let reason = body.readableBytesView.dropFirst(2)
        guard String(validating: reason, as: UTF8.self) != nil else { return .dataInconsistentWithMessage }
        return nil
    }

    /// Codes an endpoint may put in a close frame (RFC 6455 §7.4.1 and the IANA registry):
    /// 1000-1003, 1007-1014, and 3000-4999 (registered and private use).
    static func isSendable(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}
