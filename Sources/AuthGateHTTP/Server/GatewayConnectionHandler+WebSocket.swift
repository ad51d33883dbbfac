import AuthGateCore
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// WebSocket upgrades on proxy routes. The client's handshake is forwarded (its key, version,
/// subprotocols, extensions and origin, plus the identity headers) on an upstream connection of
/// its own, and the upstream answers it: a `101` is relayed to the client and both connections
/// become frame relays (``WebSocketRelayHandler``); any other answer is relayed as it is, and
/// both connections close after it. A WebSocket on an HTTP/2 stream (RFC 8441) reaches here as
/// the same handshake with a key the gateway made (``HTTP2WebSocketStream``), and its stream
/// becomes the client side's relay.
extension GatewayConnectionHandler {
    /// The upstream agreed to switch: relay its `101`, then turn both pipelines into relays.
    func switchToTunnel(_ head: HTTPResponseHead, _ exchange: ProxyExchange) {
        guard let context, let connection = exchange.connection, let plan = exchange.plan,
            head.headers["Upgrade"].contains(where: { $0.trimmingOWS.equalsLowercaseASCII("websocket") }),
            // Over HTTP/2 the gateway made the handshake's key (the client sends none), so it
            // checks the answer to it, as an HTTP/1.1 client checks its own.
            !isHTTP2Stream
                || HTTP2WebSocketHandshake.accepts(
                    head.headers["Sec-WebSocket-Accept"], key: plan.headers.first(name: "Sec-WebSocket-Key") ?? "")
        else {
            perform(exchange.machine.upstreamFailed(.protocolViolation, reusedConnection: false), exchange)
            return
        }
        // The upstream's end of input may be in this read cycle too: it waits for the relay,
        // behind the frames the HTTP decoder holds.
        let endOfInput = try? connection.channel.pipeline.syncOperations.handler(type: UpstreamEndOfInputGate.self)
        endOfInput?.hold()
        exchange.connection = nil
        // What the client is told: 101 over HTTP/1.1, 200 on an HTTP/2 stream (RFC 8441).
        exchange.status = isHTTP2Stream ? 200 : 101
        mode = .tunnel
        connectionGuard?.becameTunnel()
        connection.handler.endExchange()
        var headers = ProxyHeaders.clientHeaders(from: head.headers, requestID: exchange.context.requestID, keepsUpgrade: true)
        if plan.answersGatewaySubprotocol, !headers.contains(name: "Sec-WebSocket-Protocol") {
            headers.add(name: "Sec-WebSocket-Protocol", value: WebSocketSubprotocolCredential.marker)
        }
        context.writeAndFlush(
            wrapOutboundOut(.head(HTTPResponseHead(version: exchange.context.version, status: .switchingProtocols, headers: headers))), promise: nil)
        self.exchange = nil
        let maxFrame = proxy?.configuration.proxy.maxWebSocketFrame ?? 1 << 20
        let watch = plan.claims.flatMap { claims in proxy.map { WebSocketRelayHandler.Watch(claims: claims, authenticator: $0.authenticator) } }
        let log = logger(for: exchange)
        let (clientRelay, upstreamRelay) = WebSocketRelayHandler.pair(watch: watch, logger: log)
        let clientChannel = context.channel
        let httpVersion = isHTTP2Stream ? "2" : "1.1"
        let upstreamChannel = connection.channel
        // After this read cycle: the decoders are mid-call now.
        context.eventLoop.assumeIsolated().execute {
            do {
                try Self.installRelay(clientRelay, maxFrame: maxFrame, on: clientChannel.pipeline.syncOperations, side: .client)
                try Self.installRelay(
                    upstreamRelay, maxFrame: maxFrame, on: upstreamChannel.pipeline.syncOperations, side: .upstream, endOfInput: endOfInput)
                clientRelay.record.opened(httpVersion: httpVersion)
                log.info("websocket opened", metadata: ["gw.user_id": "\(plan.claims?.sub ?? "")", "gw.http_version": "\(httpVersion)"])
                // A connection that closed after the 101 and before its relay was there (a
                // reset; an upstream's FIN is only an end of input, held for the relay): its
                // relay will never see that close, and the tunnel would stay open with nobody at
                // one end. It ends now, as the relay would have ended it (1001 to the other
                // side); what an upstream sent after its 101 went with its decoder.
                for (relay, channel) in [(clientRelay, clientChannel), (upstreamRelay, upstreamChannel)] where !channel.isActive {
                    relay.closedBeforeRelaying()
                }
                // The client stopped sending, or graceful shutdown began, before the relay was
                // there to see it (while the upstream answered, or in this read cycle): the
                // tunnel ends at once rather than never, as it would had the relay seen it.
                if let end = self.tunnelEndsOnceBuilt { clientRelay.endBeforeRelaying(end) }
            } catch {
                log.warning("websocket relay could not start", metadata: ["gw.error": "\(error)"])
                clientChannel.close(promise: nil)
                upstreamChannel.close(promise: nil)
            }
        }
        GatewayMetrics.request(
            route: exchange.context.routeName ?? "other", status: exchange.status, duration: ContinuousClock.now - exchange.started)
    }

    /// Replaces a connection's HTTP handlers by WebSocket framing and `relay`. Bytes the HTTP
    /// decoder holds past the handshake reach the frame decoder. The decoder leaves a task later
    /// (after handing those bytes on): only then may `relay` write (``WebSocketRelayHandler/becameReady()``),
    /// and only then does an end of input held by `endOfInput` reach it, after those frames;
    /// if the decoder cannot leave (the connection closed meanwhile), the connection is closed.
    private static func installRelay(
        _ relay: WebSocketRelayHandler, maxFrame: Int, on pipeline: ChannelPipeline.SynchronousOperations, side: WebSocketRelayHandler.Side,
        endOfInput: UpstreamEndOfInputGate? = nil
    ) throws {
        if side == .client, let stream = try? pipeline.handler(type: HTTP2WebSocketStream.self) {
            // An HTTP/2 stream: the relay reads the stream's DATA, ahead of NIO's codec, which
            // is left behind it with nothing more to read. No decoder has to leave first.
            try pipeline.addHandlers([HTTP2TunnelFraming()] + relay.framing(maxFrame: maxFrame), position: .after(stream))
            relay.becameReady()
            stream.startRelaying()
            return
        }
        let decoder: any RemovableChannelHandler
        let others: [any RemovableChannelHandler]
        switch side {
        case .client:
            decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            others = [try pipeline.handler(type: HTTP1ResponseEncoder.self)]
        case .upstream:
            decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self)
            others = [try pipeline.handler(type: UpstreamChannelHandler.self), try pipeline.handler(type: HTTPRequestEncoder.self)]
        }
        try pipeline.addHandlers(relay.framing(maxFrame: maxFrame), position: .after(decoder))
        for handler in others { pipeline.removeHandler(handler, promise: nil) }
        let decoderRemoved = pipeline.eventLoop.makePromise(of: Void.self)
        decoderRemoved.futureResult.assumeIsolated().whenComplete { result in
            switch result {
            case .success:
                relay.becameReady()
                endOfInput?.release()
            case .failure: relay.closeNow()
            }
        }
        pipeline.removeHandler(decoder, promise: decoderRemoved)
    }
}
