#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import AuthGateCore
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// Forwards the most common proxied request below Hummingbird's request machinery: a request
/// without a body, on a route, whose token memory alone allows (verified-token cache, revocation
/// view current, route policy), with an idle kept-alive connection to the chosen upstream on this
/// connection's event loop. Everything else, and anything this path cannot finish itself, goes
/// on to Hummingbird and ``EdgeProxyMiddleware`` untouched, which apply the same rules and
/// produce every error answer. bench/proxy measures what this path saves.
///
/// It sits in each client connection's pipeline after the HTTP codec, and keeps requests in
/// order: while a request is served here or by Hummingbird, later (pipelined) requests wait, and
/// reading from the client pauses while one waits.
final class ProxyFastPathHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// One request served here.
    private struct Exchange {
        let head: HTTPRequest
        let path: String
        let requestID: String
        let route: String
        let userID: String?
        let started: ContinuousClock.Instant
        var requestEnded = false
        var responseEnded = false
        var upstream: UpstreamConnection?
    }

    private enum Mode {
        case idle
        /// Hummingbird has the request; this handler watches its parts go by.
        case passing(requestEnded: Bool, responseEnded: Bool)
        case serving(Exchange)
    }

    private let proxy: EdgeProxy
    private let logger: Logger
    private var mode = Mode.idle
    private var pending = CircularBuffer<HTTPRequestPart>()
    private var readHeld = false
    private var context: ChannelHandlerContext?
    /// Parts were passed on outside a read cycle: Hummingbird's inbound stream delivers what it
    /// got on `channelReadComplete`, which must then be fired by hand.
    private var passedOutsideRead = false
    private var inRead = false

    init(proxy: EdgeProxy, logger: Logger) {
        self.proxy = proxy
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending.append(unwrapInboundIn(data))
        inRead = true
        drain(context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inRead = false
        passedOutsideRead = false
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .serving(let exchange) = mode, !exchange.responseEnded {
            // The client left while its upstream exchange runs: that connection cannot be reused.
            exchange.upstream?.channel.close(promise: nil)
        }
        context.fireChannelInactive()
    }

    /// Takes the waiting parts while the current request allows.
    private func drain(_ context: ChannelHandlerContext) {
        while let part = pending.first, accept(part, context) {
            pending.removeFirst()
        }
        flushPassedParts(context)
        if readHeld, pending.isEmpty {
            readHeld = false
            context.read()
        }
    }

    /// Handles one part; false when it must wait for the current response.
    private func accept(_ part: HTTPRequestPart, _ context: ChannelHandlerContext) -> Bool {
        switch mode {
        case .idle:
            if case .head(let head) = part, serve(head, context) {
                // Serving here now.
            } else {
                mode = .passing(requestEnded: false, responseEnded: false)
                pass(part, context)
            }
            return true
        case .passing(requestEnded: false, _):
            pass(part, context)
            return true
        case .serving(var exchange) where !exchange.requestEnded:
            guard case .end = part else {
                // Only bodiless requests are served here; the codec framed this one otherwise.
                context.close(promise: nil)
                return true
            }
            exchange.requestEnded = true
            mode = .serving(exchange)
            finishIfDone(context)
            return true
        case .passing, .serving:
            return false
        }
    }

    /// Passes a part on to Hummingbird.
    private func pass(_ part: HTTPRequestPart, _ context: ChannelHandlerContext) {
        if case .end = part, case .passing(_, let responseEnded) = mode {
            mode = .passing(requestEnded: true, responseEnded: responseEnded)
        }
        if !inRead { passedOutsideRead = true }
        context.fireChannelRead(wrapInboundOut(part))
        finishIfDone(context)
    }

    /// Completes the read cycle for parts passed on outside one.
    private func flushPassedParts(_ context: ChannelHandlerContext) {
        guard passedOutsideRead else { return }
        passedOutsideRead = false
        context.fireChannelReadComplete()
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        // Reading goes on while a response is awaited (a read only completes when the client
        // sends, and holding it would cost two epoll changes per request); it pauses once a
        // pipelined part is waiting.
        if pending.isEmpty {
            context.read()
        } else {
            readHeld = true
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if case .end = unwrapOutboundIn(data), case .passing(let requestEnded, _) = mode {
            mode = .passing(requestEnded: requestEnded, responseEnded: true)
            finishIfDone(context)
        }
    }

    /// Back to idle once the current request and its response are both complete.
    private func finishIfDone(_ context: ChannelHandlerContext) {
        switch mode {
        case .passing(true, true):
            mode = .idle
        case .serving(let exchange) where exchange.requestEnded && exchange.responseEnded:
            mode = .idle
        default:
            return
        }
        context.eventLoop.execute { [self] in
            if let context = self.context { drain(context) }
        }
    }

    // MARK: Serving

    /// Starts serving `head` here, or returns false to leave it to Hummingbird.
    private func serve(_ head: HTTPRequest, _ context: ChannelHandlerContext) -> Bool {
        let fields = head.headerFields
        guard fields[values: .contentLength].allSatisfy({ $0 == "0" }), fields[.transferEncoding] == nil, fields[.upgrade] == nil,
            !fields[values: .connection].contains(where: { $0.lowercased().contains("close") })
        else { return false }
        let target = head.path ?? "/"
        let question = target.utf8.firstIndex(of: UInt8(ascii: "?"))
        let path = question.map { String(target[..<$0]) } ?? target
        guard let route = proxy.route(host: head.authority, path: path, method: head.method.rawValue) else { return false }
        let bearer = fields[.authorization].flatMap(RequestSupport.bearerToken(authorization:))
        guard case .decided(.allow(let claims)) = proxy.authenticator.authorizeFromMemory(bearer: bearer, route: route.configuration, now: Date()),
            let (index, upstream) = proxy.pools[route.index].next()
        else { return false }
        guard let connection = proxy.connections.takeIdle(UpstreamConnectionPool.Key(upstream), on: context.eventLoop) else { return false }

        let requestID = RequestLogMiddleware.acceptableRequestID(fields[RequestLogMiddleware.requestIDHeader]) ?? RequestLogMiddleware.newRequestID()
        let headers = proxy.upstreamHeaders(
            fields, claims: claims, route: route.configuration, peer: context.channel.remoteAddress, authority: head.authority, requestID: requestID
        )
        let upstreamHead = EdgeProxy.upstreamHead(
            method: HTTPMethod(rawValue: head.method.rawValue), path: path, query: question.map { target[target.utf8.index(after: $0)...] },
            route: route.configuration, upstream: upstream, headers: headers
        )
        let connections = proxy.connections
        let pool = proxy.pools[route.index]
        mode = .serving(Exchange(head: head, path: path, requestID: requestID, route: route.configuration.name, userID: claims?.sub, started: .now, upstream: connection))
        proxy.fastPathServed.add(1, ordering: .relaxed)
        let response = connection.start(head: upstreamHead, timeouts: UpstreamConnection.Timeouts(route.configuration)) { reusable in
            connections.release(connection, reusable: reusable)
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        response.whenComplete { result in
            if case .success = result { pool.markHealthy(index) }
            bound.value.respond(result)
        }
        return true
    }

    /// Relays the upstream's answer, or hands the request to Hummingbird when it failed.
    private func respond(_ result: Result<UpstreamResponseHandler.Start, any Error>) {
        guard let context, case .serving(let exchange) = mode else {
            // The client is gone; a streamed body not read any further closes its connection.
            return
        }
        switch result {
        case .success(let start):
            let headers = ProxyHeaders.clientHeaders(from: start.head.headers, requestID: exchange.requestID)
            let head = HTTPResponse(status: .init(code: Int(start.head.status.code), reasonPhrase: start.head.status.reasonPhrase), headerFields: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            switch start.body {
            case .complete(let buffer):
                if buffer.readableBytes > 0 { context.write(wrapOutboundOut(.body(buffer)), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                responseEnded(status: head.status.code)
            case .streaming(let body):
                context.flush()
                relay(body, status: head.status.code, context)
            }
        case .failure(let error as UpstreamError) where error.isTimeout:
            GatewayMetrics.upstreamError(route: exchange.route, kind: "timeout")
            logger(for: exchange).warning("upstream timed out", metadata: ["gw.error": "\(error)"])
            let timeout = GoTrueError(.gatewayTimeout, code: "request_timeout", message: "The upstream did not answer in time")
            guard let (fields, body) = try? timeout.encoded(requestHeaders: exchange.head.headerFields, requestID: exchange.requestID) else {
                context.close(promise: nil)
                return
            }
            var headers = fields
            headers[RequestLogMiddleware.requestIDHeader] = exchange.requestID
            headers[.contentLength] = String(body.readableBytes)
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .gatewayTimeout, headerFields: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            responseEnded(status: 504)
        case .failure:
            // Connect trouble or a connection that broke before answering: Hummingbird's path
            // retries, marks upstreams and answers 502 itself.
            mode = .passing(requestEnded: false, responseEnded: false)
            pass(.head(exchange.head), context)
            if exchange.requestEnded { pass(.end(nil), context) }
            flushPassedParts(context)
        }
    }

    /// Streams a larger or open-ended body to the client, a part at a time, each written before
    /// the next is read from the upstream.
    private func relay(_ body: UpstreamResponseHandler.Body, status: Int, _ context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        Task {
            do {
                for try await buffer in body {
                    try await eventLoop.flatSubmit {
                        bound.value.writeAndFlush(handler.value.wrapOutboundOut(.body(buffer)))
                    }.get()
                }
                eventLoop.execute {
                    bound.value.writeAndFlush(handler.value.wrapOutboundOut(.end(nil)), promise: nil)
                    handler.value.responseEnded(status: status)
                }
            } catch {
                eventLoop.execute { bound.value.close(promise: nil) }
            }
        }
    }

    /// The logger of a request: its id and route on every line (made only when a line is written).
    private func logger(for exchange: Exchange) -> Logger {
        var logger = self.logger
        logger[metadataKey: "gw.request_id"] = .string(exchange.requestID)
        logger[metadataKey: "gw.route"] = .string(exchange.route)
        return logger
    }

    private func responseEnded(status: Int) {
        guard let context, case .serving(var exchange) = mode else { return }
        exchange.responseEnded = true
        exchange.upstream = nil
        mode = .serving(exchange)
        GatewayMetrics.request(route: exchange.route, status: status, duration: ContinuousClock.now - exchange.started)
        if logger.logLevel <= .info {
            RequestLogMiddleware.logAccess(
                logger(for: exchange), method: exchange.head.method.rawValue, path: exchange.path, route: exchange.route, status: status,
                since: exchange.started, userID: exchange.userID, reason: nil
            )
        }
        finishIfDone(context)
    }
}
