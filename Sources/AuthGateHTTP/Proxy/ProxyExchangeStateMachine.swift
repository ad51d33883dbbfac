import NIOCore
import NIOHTTP1

/// The life of one proxied request: the client's request body, the upstream connection and the
/// response, as facts. Every event returns the one action to carry out
/// (``GatewayConnectionHandler`` does it); the machine does no I/O and is tested without sockets.
///
/// The request body has one reader, this machine's owner, and one destination at a time: held
/// while the upstream connection is being made, forwarded while it is open, and discarded
/// (counted against `max_body`) once the upstream side is over, so that an upstream answering
/// early leaves the client connection usable once the rest of the body has arrived ("draining").
/// The upstream connection is handed back for reuse only when the request was sent whole and the
/// response arrived whole.
///
/// No event traps: one that does not fit the state (a late part, a second end) is answered by
/// closing both connections.
struct ProxyExchangeStateMachine {
    /// The client's request.
    enum RequestState: Equatable {
        /// Body parts may still come; `received` bytes so far.
        case receiving(received: Int)
        /// Its end has arrived.
        case complete
    }

    /// Where the request goes.
    enum UpstreamState: Equatable {
        /// No connection yet: body parts wait here (reading is held meanwhile, so at most one
        /// read's worth). `attempts` connections were tried so far.
        case connecting(buffered: [ByteBuffer], attempts: Int)
        /// The head is written; body parts are forwarded as they come; `endSent` once the end is.
        case sending(endSent: Bool)
        /// Over (answered, failed or refused): body parts still arriving are discarded.
        case finished
    }

    /// The answer to the client.
    enum ResponseState: Equatable {
        case awaitingHead
        /// The head is written; the body follows.
        case streaming
        /// Written whole (the upstream's, or a failure answered by the gateway).
        case complete
    }

    /// What the client connection does once this exchange's response is written.
    enum Next: Equatable {
        /// Serve the client's next request.
        case nextRequest
        /// Discard the rest of the request body first (bounded by `max_body` and a timer).
        case drainRequestBody
        /// Close the client connection.
        case closeClient
    }

    /// A failure the gateway answers itself.
    enum Failure: Equatable {
        /// 413: the body went over the route's `max_body`.
        case bodyTooLarge
        /// 400: the body's framing broke (a chunk size that is not one, a chunk without its
        /// line end): nothing after it can be read.
        case unparsableBody
        /// 502: no connection, or it broke before the response head.
        case badGateway(UpstreamError)
        /// 504: the upstream took the request but did not answer in time.
        case gatewayTimeout(UpstreamError)
        /// 503: a WebSocket handshake found `proxy.max_websocket_tunnels` open.
        case tunnelLimitReached
    }

    /// The action for an event.
    enum Action: Equatable {
        case none
        /// Write the upstream request head, then `buffered` body parts, then the end when
        /// `end`; flush.
        case sendRequest(buffered: [ByteBuffer], end: Bool)
        /// Forward a body part to the upstream (flushed at the end of the client's read cycle).
        case forwardBody(ByteBuffer)
        /// Forward the request's end to the upstream and flush.
        case forwardEnd
        /// Connect again: to another upstream when `otherUpstream`, else a fresh connection to
        /// the same one (the kept-alive one had been closed by the upstream).
        case retry(otherUpstream: Bool)
        case writeResponseHead(HTTPResponseHead)
        case writeResponseBody(ByteBuffer)
        /// Write the response's end; hand the upstream connection back when `upstreamReusable`,
        /// else close it; then `then`.
        case finishResponse(upstreamReusable: Bool, then: Next)
        /// Answer `failure` to the client; close the upstream connection if there is one; then `then`.
        case respond(Failure, then: Next)
        /// The rest of the body has been discarded: the exchange is over.
        case drained(then: Next)
        /// Close the client connection and the upstream's, if open: the exchange cannot end well.
        case closeBoth
    }

    private(set) var request: RequestState
    private(set) var upstream: UpstreamState
    private(set) var response: ResponseState
    /// The route's `max_body`.
    let maxBody: Int
    /// The client's connection may serve another request after this one.
    let clientKeepAlive: Bool
    /// A failed connect may be tried on another upstream (an idempotent request without a body).
    let retriesConnects: Bool
    private var retriedStaleConnection = false

    /// A request to forward: it waits for its upstream connection.
    /// - Parameters:
    ///   - hasBody: body parts will follow the head (`Content-Length` over 0, or chunked).
    ///   - idempotent: the method may be sent twice (GET, HEAD, OPTIONS, PUT, DELETE, TRACE).
    init(hasBody: Bool, idempotent: Bool, maxBody: Int, clientKeepAlive: Bool) {
        request = hasBody ? .receiving(received: 0) : .complete
        upstream = .connecting(buffered: [], attempts: 1)
        response = .awaitingHead
        self.maxBody = maxBody
        self.clientKeepAlive = clientKeepAlive
        retriesConnects = idempotent && !hasBody
    }

    /// A request refused before anything was forwarded: its answer is written at once, and a
    /// body, if it has one, is drained.
    init(refusedWithBody hasBody: Bool, maxBody: Int, clientKeepAlive: Bool) {
        request = hasBody ? .receiving(received: 0) : .complete
        upstream = .finished
        response = .complete
        self.maxBody = maxBody
        self.clientKeepAlive = clientKeepAlive
        retriesConnects = false
    }

    /// What follows the response of a refused request (see ``init(refusedWithBody:maxBody:clientKeepAlive:)``).
    var nextAfterRefusal: Next { afterResponse }

    /// Whether the client's next bytes are wanted now: body parts that can be forwarded or
    /// discarded at once. While the connection is being made they would only pile up.
    var wantsRequestBody: Bool {
        guard case .receiving = request else { return false }
        switch upstream {
        case .connecting: return false
        case .sending, .finished: return true
        }
    }

    /// The rest of the body is being discarded after the response was written.
    var isDraining: Bool {
        if case .receiving = request, upstream == .finished, response == .complete { return true }
        return false
    }

    // MARK: Upstream connection

    /// A connection to the upstream is ready.
    mutating func connected() -> Action {
        guard case .connecting(let buffered, _) = upstream else { return .closeBoth }
        let ended = request == .complete
        upstream = .sending(endSent: ended)
        return .sendRequest(buffered: buffered, end: ended)
    }

    /// No connection could be made.
    mutating func connectFailed(_ error: UpstreamError) -> Action {
        guard case .connecting(let buffered, let attempts) = upstream else { return .none }
        if retriesConnects, attempts < 2, error != .tunnelLimitReached {
            upstream = .connecting(buffered: buffered, attempts: attempts + 1)
            return .retry(otherUpstream: true)
        }
        return answerFailure(error)
    }

    // MARK: Request body

    mutating func requestBody(_ buffer: ByteBuffer) -> Action {
        guard case .receiving(let received) = request else { return .closeBoth }
        let (total, overflow) = received.addingReportingOverflow(buffer.readableBytes)
        request = .receiving(received: overflow ? Int.max : total)
        if overflow || total > maxBody {
            switch response {
            case .awaitingHead:
                upstream = .finished
                response = .complete
                return .respond(.bodyTooLarge, then: .closeClient)
            case .streaming, .complete:
                upstream = .finished
                return .closeBoth
            }
        }
        switch upstream {
        case .connecting(var buffered, let attempts):
            buffered.append(buffer)
            upstream = .connecting(buffered: buffered, attempts: attempts)
            return .none
        case .sending(endSent: false):
            return .forwardBody(buffer)
        case .sending(endSent: true):
            return .closeBoth
        case .finished:
            return .none
        }
    }

    mutating func requestEnd() -> Action {
        guard case .receiving = request else { return .closeBoth }
        request = .complete
        switch upstream {
        case .connecting:
            return .none
        case .sending:
            upstream = .sending(endSent: true)
            return .forwardEnd
        case .finished:
            return response == .complete ? .drained(then: afterResponse) : .none
        }
    }

    /// The rest of the client's body cannot be parsed, so the request will never end. Before the
    /// response head the client is answered 400 and the upstream connection (which may hold
    /// part of the body) is closed; after it, both connections close. Either way the client's
    /// connection closes: nothing after the broken framing can be read.
    mutating func requestBodyUnparsable() -> Action {
        guard case .receiving = request else { return .closeBoth }
        request = .complete
        upstream = .finished
        switch response {
        case .awaitingHead:
            response = .complete
            return .respond(.unparsableBody, then: .closeClient)
        case .streaming, .complete:
            return .closeBoth
        }
    }

    // MARK: Response

    mutating func responseHead(_ head: HTTPResponseHead) -> Action {
        guard response == .awaitingHead, case .sending = upstream else { return .closeBoth }
        response = .streaming
        return .writeResponseHead(head)
    }

    mutating func responseBody(_ buffer: ByteBuffer) -> Action {
        guard response == .streaming else { return .closeBoth }
        return .writeResponseBody(buffer)
    }

    /// The upstream's response is complete; `keepAlive` when it will take another request.
    mutating func responseEnd(keepAlive: Bool) -> Action {
        guard response == .streaming else { return .closeBoth }
        response = .complete
        let reusable = keepAlive && upstream == .sending(endSent: true)
        upstream = .finished
        return .finishResponse(upstreamReusable: reusable, then: afterResponse)
    }

    /// The upstream connection failed (it is closed); `reusedConnection` when it had served an
    /// exchange before this one.
    mutating func upstreamFailed(_ error: UpstreamError, reusedConnection: Bool) -> Action {
        switch response {
        case .awaitingHead:
            if error == .connectionLost(beforeResponse: true), reusedConnection, retriesConnects, !retriedStaleConnection {
                retriedStaleConnection = true
                upstream = .connecting(buffered: [], attempts: 1)
                return .retry(otherUpstream: false)
            }
            return answerFailure(error)
        case .streaming:
            // The head is out: a truncated body can only be signalled by closing.
            upstream = .finished
            return .closeBoth
        case .complete:
            return .none
        }
    }

    // MARK: Client

    /// The client connection closed.
    mutating func clientClosed() -> Action {
        let over = upstream == .finished && response == .complete
        upstream = .finished
        response = .complete
        return over ? .none : .closeBoth
    }

    /// The rest of the body did not arrive in time after the response.
    mutating func drainTimedOut() -> Action {
        isDraining ? .closeBoth : .none
    }

    // MARK: Helpers

    private mutating func answerFailure(_ error: UpstreamError) -> Action {
        upstream = .finished
        response = .complete
        let failure: Failure =
            if error == .tunnelLimitReached { .tunnelLimitReached } else if error.isTimeout { .gatewayTimeout(error) } else { .badGateway(error) }
        return .respond(failure, then: afterResponse)
    }

    /// After the response: the next request, or draining the rest of the body first.
    private var afterResponse: Next {
        guard request == .complete else { return .drainRequestBody }
        return clientKeepAlive ? .nextRequest : .closeClient
    }
}
