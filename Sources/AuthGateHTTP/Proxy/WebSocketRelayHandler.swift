import AuthGateCore
import Logging
import NIOCore
import NIOSSL
import NIOWebSocket

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One side of a proxied WebSocket connection: frames read on this side's channel are written
/// to the other side's, as they come and as they are (extension bits included, so an extension
/// the two ends agreed on passes through); frames bound for the upstream are masked, frames bound
/// for the client are not (RFC 6455 §5.3). A frame the protocol forbids (``WebSocketFrameRules``:
/// an unmasked frame from the client, a masked one from the upstream, a reserved opcode, a bad
/// close body) is not relayed: its side gets 1002 (1007 for a close reason that is not UTF-8),
/// the other side 1001.
///
/// Reading on one side pauses while the other side's socket is full. When either connection
/// closes, the other is closed. A frame over `proxy.max_websocket_frame` closes that side with
/// 1009 and the other with 1001. On the client side, the caller's session is checked against
/// the revocation view every ``recheckInterval``: once it ends (revoked, signed out, banned,
/// expired, or its state unknowable), the client is closed with 1008 and the upstream with 1001.
/// Nothing is written to a side until its HTTP handlers are gone (``becameReady()``): the HTTP
/// decoder leaves the pipeline a task later than it is asked to, and would take a frame for an
/// HTTP part (a trap). Frames for it meanwhile (sent with the handshake, or right after the
/// 101) wait, and the other side is not read.
/// A side that stops sending (a FIN, or a TLS `close_notify`: client connections and tunnel
/// handshakes' upstream connections allow half-closure) or whose connection closes ends the
/// relay: the other side gets 1001. At graceful shutdown both sides get 1001, so that clients
/// reconnect to another replica at once rather than holding the drain until `shutdown_timeout`.
/// Each side is sent one close frame at most and nothing after it (RFC 6455 §5.5.1): a side that
/// was relayed the other's close frame is only closed, whatever ends the tunnel next.
final class WebSocketRelayHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// How often an open connection's session is checked again.
    static let recheckInterval = TimeAmount.milliseconds(250)

    enum Side: String { case client, upstream }

    /// The caller's session, watched on the client side.
    struct Watch {
        let claims: AccessTokenClaims
        let authenticator: EdgeAuthenticator
    }

    let side: Side
    /// The other side's relay; set by ``pair(watch:logger:)``, cleared when one side ends.
    var peer: WebSocketRelayHandler?
    private let watch: Watch?
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var readHeld = false
    private var wroteSinceFlush = false
    private var closing = false
    /// A close frame from the other side was written here: its closing handshake is under way.
    private var closeRelayed = false
    /// The HTTP handlers have left this side's pipeline: frames may be written.
    private(set) var ready = false
    /// Frames for this side, and how it is to end, from before it was ready.
    private var held: [WebSocketFrame] = []
    private var endOnceReady: PendingEnd?

    /// How a side asked to end before it was ready ends once it is, after what waited.
    private enum PendingEnd {
        case closeFrame(WebSocketErrorCode, reason: String?)
        case connectionClose
    }
    private var watcher: RepeatedTask?
    private var checkingStore = false

    /// The tunnel as the metrics count it, shared by its two relays.
    let record: WebSocketTunnelRecord

    init(side: Side, watch: Watch?, logger: Logger, record: WebSocketTunnelRecord) {
        self.side = side
        self.watch = watch
        self.logger = logger
        self.record = record
    }

    /// A tunnel's two relays, each the other's ``peer``, sharing one ``record``; `watch` (the
    /// caller's session) is on the client side.
    static func pair(watch: Watch?, logger: Logger) -> (client: WebSocketRelayHandler, upstream: WebSocketRelayHandler) {
        let record = WebSocketTunnelRecord()
        let client = WebSocketRelayHandler(side: .client, watch: watch, logger: logger, record: record)
        let upstream = WebSocketRelayHandler(side: .upstream, watch: nil, logger: logger, record: record)
        client.peer = upstream
        upstream.peer = client
        return (client, upstream)
    }

    /// What a side's pipeline ends with as a relay: NIO's frame decoder (frames up to `maxFrame`
    /// bytes) and encoder, then this relay.
    func framing(maxFrame: Int) -> [any ChannelHandler] {
        [ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrame)), WebSocketFrameEncoder(), self]
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard watch != nil else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        watcher = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.recheckInterval, delay: Self.recheckInterval) { _ in
            bound.value.recheck()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        watcher?.cancel()
        watcher = nil
        self.context = nil
        if side == .client { record.closed() }
    }

    /// Logs why the tunnel ends (`outcome`, with `metadata`), and gives it to the ``record``.
    private func logClosed(_ outcome: String, _ metadata: Logger.Metadata = [:]) {
        record.ending(outcome)
        logger.info("websocket closed", metadata: metadata.merging(["gw.outcome": "\(outcome)"]) { $1 })
    }

    // MARK: Relaying

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let peer, !closing else { return }
        let frame = unwrapInboundIn(data)
        if let code = WebSocketFrameRules.violation(of: frame, from: side) {
            logClosed("frame_refused", ["gw.side": "\(side.rawValue)", "gw.code": "\(code)"])
            return end(code, reason: nil, peerCode: .goingAway)
        }
        peer.relay(frame)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        peer?.flushRelayed()
        context.fireChannelReadComplete()
    }

    /// Writes a frame read on the other side to this side (flushed at the end of that read cycle).
    /// Nothing follows a close frame (RFC 6455 §5.5.1): frames the other side sends after its own
    /// are dropped.
    private func relay(_ frame: WebSocketFrame) {
        guard let context, !closing, !closeRelayed else { return }
        if frame.opcode == .connectionClose {
            closeRelayed = true
            record.ending("closed")
        }
        guard ready else {
            held.append(Self.adapted(frame, for: side))
            return
        }
        context.write(wrapOutboundOut(Self.adapted(frame, for: side)), promise: nil)
        wroteSinceFlush = true
    }

    /// This side's HTTP handlers are gone: what waited is written, and the other side is read.
    /// The bytes this side's HTTP decoder held past the handshake have just been decoded and
    /// relayed to the other side, outside any read cycle: no `channelReadComplete` flushes them.
    func becameReady() {
        guard !ready else { return }
        ready = true
        peer?.flushRelayed()
        let waiting = held
        held = []
        if let context, !closing, !waiting.isEmpty {
            for frame in waiting { context.write(wrapOutboundOut(frame), promise: nil) }
            context.flush()
        }
        switch endOnceReady {
        case .closeFrame(let code, let reason): sendCloseAndClose(code, reason: reason)
        case .connectionClose: closeConnection()
        case nil: peer?.resumeReading()
        }
        endOnceReady = nil
    }

    private func flushRelayed() {
        guard wroteSinceFlush, let context else { return }
        wroteSinceFlush = false
        context.flush()
    }

    /// A frame as it may be sent to `side`: masked toward the upstream (with the client's key, or
    /// a new one), unmasked toward the client.
    static func adapted(_ frame: WebSocketFrame, for side: Side) -> WebSocketFrame {
        let maskKey: WebSocketMaskingKey? = side == .upstream ? (frame.maskKey ?? .random()) : nil
        if frame.maskKey == nil, maskKey == nil { return frame }
        return WebSocketFrame(
            fin: frame.fin, rsv1: frame.rsv1, rsv2: frame.rsv2, rsv3: frame.rsv3, opcode: frame.opcode, maskKey: maskKey,
            data: frame.unmaskedData, extensionData: frame.unmaskedExtensionData
        )
    }

    // MARK: Back-pressure

    func read(context: ChannelHandlerContext) {
        if let peer, !peer.ready || peer.context?.channel.isWritable == false {
            readHeld = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { peer?.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    private func resumeReading() {
        guard readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    // MARK: Ending

    func channelInactive(context: ChannelHandlerContext) {
        connectionClosed()
        context.fireChannelInactive()
    }

    /// This side's connection closed before the relay was in its pipeline: the tunnel ends as
    /// ``channelInactive(context:)`` would have ended it.
    func closedBeforeRelaying() {
        logClosed("closed_before_relay", ["gw.side": "\(side.rawValue)"])
        connectionClosed()
    }

    /// This side's connection closed without a FIN first, or was reset. The other side is told
    /// 1001, as for a FIN: an upstream that restarts is "going away", where a bare close left the
    /// client only an abnormal closure (1006) to report.
    private func connectionClosed() {
        watcher?.cancel()
        watcher = nil
        closing = true
        tellPeerGoingAway()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // A FIN: nothing more will come from this side (without a closing handshake first,
            // RFC 6455's abnormal closure), and a tunnel nobody can write into would hold both
            // connections until the other end happened to write.
            end(.inputClosed)
        case is ChannelShouldQuiesceEvent:
            end(.shutdown)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// What ends a tunnel from outside its frames.
    enum TunnelEnd {
        /// This side stopped sending (a FIN).
        case inputClosed
        /// Graceful shutdown began.
        case shutdown
    }

    /// Ends the tunnel for a reason its client connection saw before this relay was there (while
    /// the upstream answered the handshake): the same end as had the relay seen it.
    func endBeforeRelaying(_ reason: TunnelEnd) {
        end(reason, beforeRelay: true)
    }

    private func end(_ reason: TunnelEnd, beforeRelay: Bool = false) {
        var metadata: Logger.Metadata = [:]
        if reason == .inputClosed { metadata["gw.side"] = "\(side.rawValue)" }
        if beforeRelay { metadata["gw.before_relay"] = "true" }
        logClosed(reason == .shutdown ? "shutdown" : "input_closed", metadata)
        switch reason {
        case .inputClosed: finished()
        case .shutdown: end(.goingAway, reason: nil, peerCode: .goingAway)
        }
    }

    /// This side stopped sending: the other side gets 1001 (or, when this side's close frame
    /// already reached it, only the close of its connection); this side's connection is closed.
    private func finished() {
        tellPeerGoingAway()
        closeConnection()
    }

    /// Unlinks the other side and ends it: with 1001, or (when this side's close frame already
    /// reached it) with only the close of its connection.
    private func tellPeerGoingAway() {
        detachPeer()?.sendCloseAndClose(.goingAway, reason: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS peer's FIN without `close_notify`, often right after its close frame: the end of
        // input that follows ends the tunnel as any FIN does. Taken for a frame error, it sent the
        // other side a second close frame (1001) after the one relayed to it.
        if NIOSSLError.isUncleanShutdown(error) { return }
        let code: WebSocketErrorCode = (error as? NIOWebSocketError) == .invalidFrameLength ? .messageTooLarge : .protocolError
        logClosed("frame_refused", ["gw.side": "\(side.rawValue)", "gw.code": "\(code)"])
        end(code, reason: nil, peerCode: .goingAway)
    }

    /// Sends a close frame with `code` on this side and `peerCode` on the other, then closes both.
    func end(_ code: WebSocketErrorCode, reason: String?, peerCode: WebSocketErrorCode) {
        detachPeer()?.sendCloseAndClose(peerCode, reason: nil)
        sendCloseAndClose(code, reason: reason)
    }

    /// Unlinks the two sides (nothing more is relayed either way) and returns the other one.
    private func detachPeer() -> WebSocketRelayHandler? {
        let peer = self.peer
        self.peer = nil
        peer?.peer = nil
        return peer
    }

    /// Ends this side with a close frame of `code`, or, when a close frame from the other side has
    /// already been relayed here, with only the close of its connection: a side is sent one close
    /// frame at most (RFC 6455 §5.5.1: nothing after a close frame), whatever ends the tunnel after it.
    private func sendCloseAndClose(_ code: WebSocketErrorCode, reason: String?) {
        guard let context, !closing else { return }
        if closeRelayed { return closeConnection() }
        guard ready else {
            if endOnceReady == nil { endOnceReady = .closeFrame(code, reason: reason) }
            return
        }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2 + (reason?.utf8.count ?? 0))
        data.write(webSocketErrorCode: code)
        if let reason { data.writeString(String(reason.utf8.prefix(120)) ?? "") }
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: side == .upstream ? .random() : nil, data: data)
        context.writeAndFlush(wrapOutboundOut(frame)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// Closes this side's connection, once what waits for it is written.
    private func closeConnection() {
        guard ready else {
            if endOnceReady == nil { endOnceReady = .connectionClose }
            return
        }
        closeNow()
    }

    /// Closes this side's connection at once (its HTTP decoder could not leave: it is closing),
    /// after what was relayed to it in this read cycle (a close frame, say) is flushed: a close
    /// drops unflushed writes.
    func closeNow() {
        closing = true
        guard let context else { return }
        context.flush()
        context.close(promise: nil)
    }

    // MARK: Session

    /// Ends the relay once the caller's session has ended.
    private func recheck() {
        guard let watch, !closing, !checkingStore, let context else { return }
        switch watch.authenticator.recheckFromMemory(watch.claims, now: Date()) {
        case .decided(.allow):
            break
        case .decided(.unauthorized(let reason)), .decided(.forbidden(let reason)), .decided(.unavailable(let reason)):
            sessionEnded(reason)
        case .needsStore(let claims):
            checkingStore = true
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            let authenticator = watch.authenticator
            Task {
                let decision = await authenticator.recheck(claims, now: Date())
                eventLoop.execute {
                    let relay = bound.value
                    relay.checkingStore = false
                    switch decision {
                    case .allow: break
                    case .unauthorized(let reason), .forbidden(let reason), .unavailable(let reason): relay.sessionEnded(reason)
                    }
                }
            }
        }
    }

    private func sessionEnded(_ reason: String) {
        logClosed("session_ended", ["gw.reason": "\(reason)"])
        end(.policyViolation, reason: reason, peerCode: .goingAway)
    }
}

@available(*, unavailable)
extension WebSocketRelayHandler: Sendable {}
