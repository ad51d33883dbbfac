import AuthGateCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Tracing

/// Forwarding a request to its upstream and relaying the answer, and answering refusals: the
/// handler carries out what ``ProxyExchangeStateMachine`` says.
extension GatewayConnectionHandler: UpstreamExchangeDelegate {
    // MARK: Starting

    /// Answers a refused request; its body, if any, is drained unless the connection closes.
    func refuse(_ refusal: ProxyRefusal) {
        let closes = refusal.closesConnection || !refusal.context.keepAlive || closeAfterResponse
        let machine = ProxyExchangeStateMachine(refusedWithBody: refusal.context.hasBody, maxBody: Self.refusedBodyLimit, clientKeepAlive: !closes)
        let exchange = ProxyExchange(machine: machine, plan: nil, context: refusal.context)
        exchange.reason = refusal.reason
        self.exchange = exchange
        mode = .exchange
        let (head, body) = ProxyResponses.render(refusal, closes: closes)
        writeAnswer(head, body, exchange)
        finishResponse(then: closes ? .closeClient : machine.nextAfterRefusal)
    }

    /// The most of a refused request's body read (and discarded) to keep the connection.
    static let refusedBodyLimit = 64 << 10

    /// Starts forwarding `plan`: an upstream connection is taken (or made) on this loop.
    func forward(_ plan: ProxyPlan) {
        let keepAlive = plan.context.keepAlive && !closeAfterResponse
        let machine = ProxyExchangeStateMachine(
            hasBody: plan.context.hasBody, idempotent: plan.idempotent, maxBody: plan.route.configuration.maxBody, clientKeepAlive: keepAlive
        )
        let exchange = ProxyExchange(machine: machine, plan: plan, context: plan.context)
        exchange.isTunnelHandshake = plan.isWebSocket
        self.exchange = exchange
        mode = .exchange
        if tracing { exchange.spans = ProxySpans.start(plan) }
        if plan.expectsContinue, let context {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: plan.context.version, status: .continue))), promise: nil)
        }
        connect(exchange)
    }

    /// Takes a connection for `exchange`'s current upstream.
    private func connect(_ exchange: ProxyExchange) {
        guard let plan = exchange.plan, let connections, let context else { return }
        let key = UpstreamConnectionPool.Key(plan.upstream, tls: plan.route.configuration.tls)
        let timeout = TimeAmount.nanoseconds(plan.route.configuration.connectTimeout.nanoseconds)
        let future =
            exchange.isTunnelHandshake ? connections.connectTunnel(key, connectTimeout: timeout) : connections.acquire(key, connectTimeout: timeout)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundExchange = NIOLoopBound(exchange, eventLoop: context.eventLoop)
        future.assumeIsolated().whenComplete { result in
            bound.value.connectionReady(result, for: boundExchange.value)
        }
    }

    private func connectionReady(_ result: Result<UpstreamConnection, any Error>, for exchange: ProxyExchange) {
        guard exchange === self.exchange, mode == .exchange, case .connecting = exchange.machine.upstream else {
            // The exchange is over (answered, or the client left): the connection is not needed.
            if case .success(let connection) = result { giveBack(connection, reusable: !exchange.isTunnelHandshake) }
            return
        }
        switch result {
        case .success(let connection):
            exchange.connection = connection
            perform(exchange.machine.connected(), exchange)
        case .failure(let error):
            let upstreamError = error as? UpstreamError ?? .connectFailed
            if upstreamError == .tunnelLimitReached {
                // The gateway's own limit, not the upstream's failure: it stays in rotation.
                if let repeated = OutageLog.admit("websocket tunnel limit") {
                    logger(for: exchange).warning(
                        "websocket refused: proxy.max_websocket_tunnels are open",
                        metadata: ["gw.limit": "\(connections?.tunnelLimit ?? 0)", "gw.repeated": "\(repeated)"])
                }
            } else if let plan = exchange.plan {
                proxy?.markFailed(plan)
                let (message, detail): (Logger.Message, String) =
                    if case .tlsHandshakeFailed(let reason) = upstreamError {
                        ("upstream TLS handshake failed", reason)
                    } else {
                        ("upstream failed", "\(upstreamError)")
                    }
                upstreamFailureNoted(upstreamError, message: message, detail: detail, plan: plan, exchange: exchange)
            }
            perform(exchange.machine.connectFailed(upstreamError), exchange)
        }
    }

    // MARK: Request parts

    func exchangeRequestPart(_ part: HTTPServerRequestPart) {
        guard let exchange else { return }
        switch part {
        case .head:
            perform(.closeBoth, exchange)
        case .body(let buffer):
            perform(exchange.machine.requestBody(buffer), exchange)
        case .end:
            connectionGuard?.requestEnded()
            perform(exchange.machine.requestEnd(), exchange)
        }
    }

    /// The rest of the exchange's request body cannot be parsed.
    func exchangeRequestUnparsable() {
        guard let exchange else { return }
        perform(exchange.machine.requestBodyUnparsable(), exchange)
    }

    // MARK: Upstream events

    func upstreamResponseHead(_ head: HTTPResponseHead) {
        guard let exchange else { return }
        if exchange.isTunnelHandshake, head.status == .switchingProtocols {
            switchToTunnel(head, exchange)
            return
        }
        perform(exchange.machine.responseHead(head), exchange)
    }

    func upstreamResponseBody(_ buffer: ByteBuffer) {
        guard let exchange else { return }
        perform(exchange.machine.responseBody(buffer), exchange)
    }

    func upstreamResponseEnd(keepAlive: Bool) {
        guard let exchange else { return }
        perform(exchange.machine.responseEnd(keepAlive: keepAlive && !exchange.isTunnelHandshake), exchange)
    }

    /// The end of the upstream's read: what was gathered of its response goes to the client now.
    func upstreamReadComplete() {
        guard let context else { return }
        if let gathered = exchange?.responseBody.drain() { writeResponseBodyPart(gathered, context) }
        context.flush()
    }

    private func writeResponseBodyPart(_ buffer: ByteBuffer, _ context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
    }

    func upstreamFailed(_ error: UpstreamError) {
        guard let exchange, let plan = exchange.plan else { return }
        let reused = exchange.connection?.hasServed ?? false
        exchange.connection = nil
        let action = exchange.machine.upstreamFailed(error, reusedConnection: reused)
        if action != .retry(otherUpstream: false) {
            upstreamFailureNoted(error, message: "upstream failed", detail: "\(error)", plan: plan, exchange: exchange)
        }
        perform(action, exchange)
    }

    /// Counts an upstream's failure and logs it: once per 10 s per route, upstream and kind of
    /// failure (``OutageLog``), since a dead or stalled upstream fails every request sent to it.
    private func upstreamFailureNoted(
        _ error: UpstreamError, message: Logger.Message, detail: String, plan: ProxyPlan, exchange: ProxyExchange
    ) {
        let route = plan.route.configuration.name
        GatewayMetrics.upstreamError(route: route, kind: error.metricKind)
        guard let repeated = OutageLog.admit("upstream \(route) \(plan.upstream) \(error.metricKind)") else { return }
        logger(for: exchange).warning(
            message, metadata: ["gw.upstream": "\(plan.upstream)", "gw.error": "\(detail)", "gw.repeated": "\(repeated)"])
    }

    func upstreamWritabilityChanged(isWritable: Bool) {
        if isWritable { resumeReadingIfWanted() }
    }

    // MARK: Actions

    /// Carries out one action of `exchange`'s state machine.
    func perform(_ action: ProxyExchangeStateMachine.Action, _ exchange: ProxyExchange) {
        guard let context else { return }
        switch action {
        case .none:
            break
        case .sendRequest(let buffered, let end):
            guard let connection = exchange.connection, let plan = exchange.plan else { return perform(.closeBoth, exchange) }
            var head = plan.upstreamHead
            if let spans = exchange.spans { ProxySpans.inject(spans.upstream, into: &head.headers) }
            connection.begin(head, delegate: self, timeouts: .init(plan.route.configuration), expectsUpgrade: exchange.isTunnelHandshake)
            for buffer in buffered { connection.writeBody(buffer) }
            if end { connection.writeEnd() } else { connection.flush() }
            proxy?.forwarded.add(1, ordering: .relaxed)
            resumeReadingIfWanted()
        case .forwardBody(let buffer):
            exchange.connection?.writeBody(buffer)
            upstreamNeedsFlush = true
            if exchange.connection?.isWritable == false { upstreamNeedsFlush = false; exchange.connection?.flush() }
        case .forwardEnd:
            upstreamNeedsFlush = false
            exchange.connection?.writeEnd()
        case .retry(let otherUpstream):
            retry(exchange, otherUpstream: otherUpstream)
        case .writeResponseHead(let head):
            exchange.status = Int(head.status.code)
            var headers = ProxyHeaders.clientHeaders(from: head.headers, requestID: exchange.context.requestID)
            if let cors = exchange.context.cors {
                // The route's CORS is the gateway's: the upstream's own Access-Control-* answers go.
                ProxyHeaders.removeCORSHeaders(&headers)
                headers.add(contentsOf: cors)
            }
            if !exchange.machine.clientKeepAlive || closeAfterResponse {
                headers.add(name: "Connection", value: "close")
            } else if exchange.context.version.major == 1, exchange.context.version.minor == 0 {
                headers.add(name: "Connection", value: "keep-alive")
            }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: exchange.context.version, status: head.status, headers: headers))), promise: nil)
        case .writeResponseBody(let buffer):
            // Small parts are gathered (``BodyPartGatherer``); the end of the upstream's read
            // (``upstreamReadComplete()``) or the response's end writes what is held.
            let (gathered, large) = exchange.responseBody.take(buffer, allocator: context.channel.allocator)
            if let gathered { writeResponseBodyPart(gathered, context) }
            if let large { writeResponseBodyPart(large, context) }
        case .finishResponse(let reusable, let next):
            // The upstream connection goes back first: on an HTTP/2 stream the client's end closes
            // the stream at once (both sides have ended), and a close seen while the connection
            // was still held would discard it (a new upstream connection for every request).
            if let connection = exchange.connection {
                exchange.connection = nil
                giveBack(connection, reusable: reusable)
            }
            if let plan = exchange.plan { proxy?.markHealthy(plan) }
            if let gathered = exchange.responseBody.drain() { writeResponseBodyPart(gathered, context) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            finishResponse(then: next)
        case .respond(let failure, let next):
            if let connection = exchange.connection {
                exchange.connection = nil
                connection.close()
            }
            exchange.reason = ProxyResponses.reason(failure)
            let closes = next == .closeClient || closeAfterResponse
            let (head, body) = ProxyResponses.render(failure, context: exchange.context, closes: closes)
            writeAnswer(head, body, exchange)
            finishResponse(then: closes ? .closeClient : next)
        case .drained(let next):
            exchange.drainTimer?.cancel()
            exchange.drainTimer = nil
            endExchange(exchange, then: next)
        case .closeBoth:
            if let connection = exchange.connection {
                exchange.connection = nil
                connection.close()
            }
            if exchange.status == 0 { exchange.status = 502 }
            exchange.reason = exchange.reason ?? "exchange_broken"
            abort(exchange)
        }
    }

    /// Ends `exchange` and the client connection at once: its answer could not be completed.
    private func abort(_ exchange: ProxyExchange) {
        guard self.exchange === exchange else { return }
        self.exchange = nil
        exchange.drainTimer?.cancel()
        logAccess(exchange)
        mode = .closed
        context?.close(promise: nil)
    }

    /// Tries the request again: on the route's next upstream, or on a fresh connection.
    private func retry(_ exchange: ProxyExchange, otherUpstream: Bool) {
        guard let plan = exchange.plan else { return }
        if otherUpstream {
            guard let moved = proxy?.planOnOtherUpstream(plan) else {
                // No other upstream: the machine answers the failure on its next attempt.
                perform(exchange.machine.connectFailed(.connectFailed), exchange)
                return
            }
            exchange.plan = moved
        }
        connect(exchange)
    }

    /// Writes a whole answer of the gateway's own (head, body, end) and flushes.
    private func writeAnswer(_ head: HTTPResponseHead, _ body: ByteBuffer, _ exchange: ProxyExchange) {
        guard let context else { return }
        exchange.status = Int(head.status.code)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// The response is written: the next request, draining the rest of this one's body, or closing.
    private func finishResponse(then next: ProxyExchangeStateMachine.Next) {
        connectionGuard?.responseEnded()
        guard let exchange else { return }
        switch next {
        case .drainRequestBody where !closeAfterResponse:
            guard let context else { return }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let boundExchange = NIOLoopBound(exchange, eventLoop: context.eventLoop)
            exchange.drainTimer = context.eventLoop.scheduleTask(in: drainTimeout) {
                let handler = bound.value
                guard handler.exchange === boundExchange.value else { return }
                handler.perform(boundExchange.value.machine.drainTimedOut(), boundExchange.value)
            }
            resumeReadingIfWanted()
        case .drainRequestBody:
            endExchange(exchange, then: .closeClient)
        case .nextRequest, .closeClient:
            endExchange(exchange, then: next)
        }
    }

    /// The exchange is over: the access line, then the next request or a close.
    func endExchange(_ exchange: ProxyExchange, then next: ProxyExchangeStateMachine.Next) {
        guard self.exchange === exchange else { return }
        self.exchange = nil
        exchange.drainTimer?.cancel()
        logAccess(exchange)
        if next == .closeClient || closeAfterResponse {
            closeAfterAnswer()
            return
        }
        mode = .idle
        processPending()
    }

    /// The client left while the gateway served its request.
    func exchangeClientClosed() {
        guard let exchange else { return }
        let action = exchange.machine.clientClosed()
        if let connection = exchange.connection {
            exchange.connection = nil
            connection.close()
        }
        if action == .closeBoth {
            exchange.status = 499
            exchange.reason = exchange.reason ?? "client_closed"
        }
        self.exchange = nil
        exchange.drainTimer?.cancel()
        logAccess(exchange)
    }

    /// Hands a connection back to this loop's pool (or closes a tunnel's).
    private func giveBack(_ connection: UpstreamConnection, reusable: Bool) {
        guard let connections, reusable else {
            connection.close()
            return
        }
        connections.release(connection, reusable: true)
    }

    // MARK: Access line

    /// Requests refused before a route matched, made once (on first use, after `authgate serve`
    /// bootstrapped the metrics).
    static let otherRequests = GatewayMetrics.RouteRequests(route: "other")

    func logger(for exchange: ProxyExchange) -> Logger {
        var logger = self.logger
        logger[metadataKey: "gw.request_id"] = .string(exchange.context.requestID)
        if let route = exchange.context.routeName { logger[metadataKey: "gw.route"] = .string(route) }
        return logger
    }

    private func logAccess(_ exchange: ProxyExchange) {
        let route = exchange.context.routeName ?? "other"
        let duration = ContinuousClock.now - exchange.started
        if let index = exchange.context.routeIndex, let metrics = proxy?.routeMetrics[index] {
            metrics.record(status: exchange.status, duration: duration)
        } else {
            Self.otherRequests.record(status: exchange.status, duration: duration)
        }
        if let spans = exchange.spans { ProxySpans.end(spans, status: exchange.status) }
        guard logger.logLevel <= .info else { return }
        RequestLogMiddleware.logAccess(
            logger(for: exchange), method: exchange.context.method.rawValue, path: exchange.context.path, route: route, status: exchange.status,
            since: exchange.started, userID: exchange.context.userID, reason: exchange.reason
        )
    }
}
