import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateHTTP

/// The exchange's state machine alone: every event and the action it gives.
@Suite("Proxy exchange state machine", .timeLimit(.minutes(3)))
struct ProxyExchangeStateMachineTests {
    private typealias Machine = ProxyExchangeStateMachine
    private let okHead = HTTPResponseHead(version: .http1_1, status: .ok)
    private func bytes(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 1, count: count) }

    @Test("a bodiless request: sent whole on connect; the connection is reused after a kept-alive response")
    func bodiless() {
        var machine = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        #expect(machine.connected() == .sendRequest(buffered: [], end: true))
        #expect(machine.responseHead(okHead) == .writeResponseHead(okHead))
        #expect(machine.responseBody(bytes(3)) == .writeResponseBody(bytes(3)))
        #expect(machine.responseEnd(keepAlive: true) == .finishResponse(upstreamReusable: true, then: .nextRequest))
    }

    @Test("body parts that arrive while connecting wait, then go out in order with the head")
    func bufferedWhileConnecting() {
        var machine = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        #expect(!machine.wantsRequestBody, "nothing more is read while the connection is being made")
        #expect(machine.requestBody(bytes(10)) == .none)
        #expect(machine.requestBody(bytes(5)) == .none)
        #expect(machine.connected() == .sendRequest(buffered: [bytes(10), bytes(5)], end: false))
        #expect(machine.wantsRequestBody)
        #expect(machine.requestBody(bytes(7)) == .forwardBody(bytes(7)))
        #expect(machine.requestEnd() == .forwardEnd)
        #expect(machine.responseHead(okHead) == .writeResponseHead(okHead))
        #expect(machine.responseEnd(keepAlive: true) == .finishResponse(upstreamReusable: true, then: .nextRequest))
    }

    @Test("the upstream answers before the body ends: the response is relayed, the connection is not reused, the rest is drained")
    func responseBeforeBodyEnds() {
        var machine = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        #expect(machine.requestBody(bytes(10)) == .forwardBody(bytes(10)))
        #expect(machine.responseHead(okHead) == .writeResponseHead(okHead))
        #expect(machine.responseEnd(keepAlive: true) == .finishResponse(upstreamReusable: false, then: .drainRequestBody))
        #expect(machine.isDraining && machine.wantsRequestBody)
        #expect(machine.requestBody(bytes(50)) == .none, "discarded, not forwarded")
        #expect(machine.requestEnd() == .drained(then: .nextRequest))
    }

    @Test("draining counts against max_body and gives up on the timer")
    func drainingBounded() {
        var machine = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        _ = machine.responseHead(okHead)
        _ = machine.responseEnd(keepAlive: true)
        #expect(machine.requestBody(bytes(60)) == .none)
        #expect(machine.requestBody(bytes(60)) == .closeBoth, "over max_body while draining: the client connection closes")
        var timed = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = timed.connected()
        _ = timed.responseHead(okHead)
        _ = timed.responseEnd(keepAlive: true)
        #expect(timed.drainTimedOut() == .closeBoth)
    }

    @Test("a body over max_body before the response: 413 and the client connection closes; after the head: both close")
    func bodyOverLimit() {
        var machine = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        #expect(machine.requestBody(bytes(100)) == .forwardBody(bytes(100)))
        #expect(machine.requestBody(bytes(1)) == .respond(.bodyTooLarge, then: .closeClient))
        #expect(machine.requestBody(bytes(1)) == .closeBoth, "nothing is taken after that")
        var streaming = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = streaming.connected()
        _ = streaming.responseHead(okHead)
        #expect(streaming.requestBody(bytes(101)) == .closeBoth)
        var connecting = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        #expect(connecting.requestBody(bytes(101)) == .respond(.bodyTooLarge, then: .closeClient))
        #expect(connecting.connected() == .closeBoth, "a connection made after the answer is not used")
    }

    @Test(
        "a body whose framing breaks: 400 before the response head (the upstream connection closed, never reused), both close after it; the client connection closes either way"
    )
    func unparsableBody() {
        var connecting = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        #expect(connecting.requestBody(bytes(5)) == .none)
        #expect(connecting.requestBodyUnparsable() == .respond(.unparsableBody, then: .closeClient))
        #expect(connecting.connected() == .closeBoth, "a connection made afterwards is not used")
        var sending = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = sending.connected()
        #expect(sending.requestBody(bytes(5)) == .forwardBody(bytes(5)))
        #expect(sending.requestBodyUnparsable() == .respond(.unparsableBody, then: .closeClient))
        #expect(sending.responseHead(okHead) == .closeBoth, "the upstream's late answer is not relayed")
        var streaming = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = streaming.connected()
        _ = streaming.responseHead(okHead)
        #expect(streaming.requestBodyUnparsable() == .closeBoth, "the head is out: only closing can end it")
        var draining = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = draining.connected()
        _ = draining.responseHead(okHead)
        _ = draining.responseEnd(keepAlive: true)
        #expect(draining.isDraining)
        #expect(draining.requestBodyUnparsable() == .closeBoth)
        var refused = Machine(refusedWithBody: true, maxBody: 100, clientKeepAlive: true)
        #expect(refused.requestBodyUnparsable() == .closeBoth)
        var complete = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        #expect(complete.requestBodyUnparsable() == .closeBoth, "not about this request: never trapped on")
    }

    @Test("the client hangs up mid-body: both connections close")
    func clientHangsUp() {
        var machine = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        _ = machine.requestBody(bytes(10))
        #expect(machine.clientClosed() == .closeBoth)
        #expect(machine.clientClosed() == .none, "a second close changes nothing")
    }

    @Test("the upstream hangs up mid-body before answering: 502, then the rest of the body is drained")
    func upstreamHangsUpMidBody() {
        var machine = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        _ = machine.requestBody(bytes(10))
        #expect(
            machine.upstreamFailed(.connectionLost(beforeResponse: true), reusedConnection: false)
                == .respond(.badGateway(.connectionLost(beforeResponse: true)), then: .drainRequestBody))
        #expect(machine.requestBody(bytes(10)) == .none)
        #expect(machine.requestEnd() == .drained(then: .nextRequest))
    }

    @Test("the upstream hangs up mid-response: the client connection closes (a truncated body cannot be signalled otherwise)")
    func upstreamHangsUpMidResponse() {
        var machine = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        _ = machine.responseHead(okHead)
        #expect(machine.upstreamFailed(.connectionLost(beforeResponse: false), reusedConnection: false) == .closeBoth)
    }

    @Test("timeouts answer 504; a failed connect retries once elsewhere for idempotent bodiless requests only")
    func failures() {
        var timeout = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        _ = timeout.connected()
        #expect(timeout.upstreamFailed(.headTimeout, reusedConnection: false) == .respond(.gatewayTimeout(.headTimeout), then: .nextRequest))
        var get = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        #expect(get.connectFailed(.connectFailed) == .retry(otherUpstream: true))
        #expect(get.connectFailed(.connectFailed) == .respond(.badGateway(.connectFailed), then: .nextRequest))
        var post = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        #expect(post.connectFailed(.connectTimeout) == .respond(.badGateway(.connectTimeout), then: .drainRequestBody))
        // The gateway's own tunnel limit: 503 at once, no other upstream tried.
        var handshake = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        #expect(handshake.connectFailed(.tunnelLimitReached) == .respond(.tunnelLimitReached, then: .nextRequest))
    }

    @Test("a kept-alive connection the upstream had closed: once more on a fresh connection, never twice")
    func staleConnection() {
        var machine = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        _ = machine.connected()
        #expect(machine.upstreamFailed(.connectionLost(beforeResponse: true), reusedConnection: true) == .retry(otherUpstream: false))
        #expect(machine.connected() == .sendRequest(buffered: [], end: true))
        #expect(
            machine.upstreamFailed(.connectionLost(beforeResponse: true), reusedConnection: true)
                == .respond(.badGateway(.connectionLost(beforeResponse: true)), then: .nextRequest))
        var fresh = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        _ = fresh.connected()
        #expect(
            fresh.upstreamFailed(.connectionLost(beforeResponse: true), reusedConnection: false) != .retry(otherUpstream: false),
            "only a reused connection can be stale")
    }

    @Test("the upstream connection is handed back only when both directions are complete")
    func reuseOnlyWhenComplete() {
        var closing = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: false)
        _ = closing.connected()
        _ = closing.responseHead(okHead)
        #expect(
            closing.responseEnd(keepAlive: false) == .finishResponse(upstreamReusable: false, then: .closeClient),
            "the upstream said close; the client too")
        var unsent = Machine(hasBody: true, idempotent: false, maxBody: 100, clientKeepAlive: true)
        _ = unsent.connected()
        _ = unsent.responseHead(okHead)
        #expect(
            unsent.responseEnd(keepAlive: true) == .finishResponse(upstreamReusable: false, then: .drainRequestBody), "the request was not sent whole"
        )
    }

    @Test("events that do not fit the state close, never trap")
    func invalidEvents() {
        var machine = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        #expect(machine.responseHead(okHead) == .closeBoth, "a head before the connection")
        var complete = Machine(hasBody: false, idempotent: true, maxBody: 100, clientKeepAlive: true)
        #expect(complete.requestBody(bytes(1)) == .closeBoth, "a body part for a request without one")
        #expect(complete.requestEnd() == .closeBoth, "a second end")
        _ = complete.connected()
        #expect(complete.connected() == .closeBoth, "connected twice")
        #expect(complete.responseBody(bytes(1)) == .closeBoth, "a body before the head")
        #expect(complete.responseEnd(keepAlive: true) == .closeBoth, "an end before the head")
    }

    @Test("a refused request's body is drained within the limit, then the connection serves the next request")
    func refusal() {
        var machine = Machine(refusedWithBody: true, maxBody: 100, clientKeepAlive: true)
        #expect(machine.nextAfterRefusal == .drainRequestBody)
        #expect(machine.requestBody(bytes(50)) == .none)
        #expect(machine.requestEnd() == .drained(then: .nextRequest))
        let bodiless = Machine(refusedWithBody: false, maxBody: 100, clientKeepAlive: true)
        #expect(bodiless.nextAfterRefusal == .nextRequest)
    }
}
