#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import AuthGateCore
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Tracing

/// The edge proxy: requests matching a route are authenticated by the route's policy and
/// streamed to one of its upstreams; everything else (the GoTrue API, health) goes on to the
/// router. A request matching no route falls through to the router's 404 in GoTrue's shape.
public struct EdgeProxyMiddleware: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    private let proxy: EdgeProxy

    public init(proxy: EdgeProxy) {
        self.proxy = proxy
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let route = proxy.route(host: request.head.authority, path: request.uri.path, method: request.method.rawValue) else {
            return try await next(request, context)
        }
        var context = context
        context.logger[metadataKey: "gw.route"] = .string(route.configuration.name)
        context.outcome.routeName = route.configuration.name
        if let problem = Self.framingProblem(request.headers) {
            context.logger.notice("ambiguous request framing refused", metadata: ["gw.reason": "\(problem)"])
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Ambiguous request framing: \(problem)")
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > route.configuration.maxBody {
            throw GoTrueError(.contentTooLarge, code: "request_entity_too_large", message: "Request body too large")
        }
        let claims = try await proxy.authorize(bearer: RequestSupport.bearerToken(request), route: route.configuration, logger: context.logger, outcome: context.outcome)
        if WebSocketProxy.isWebSocketUpgrade(request.headers) {
            // Only a connection's first request can be upgraded (see WebSocketProxy); a later one
            // would reach the upstream stripped of its Upgrade header.
            throw GoTrueError(.badRequest, code: "validation_failed", message: "A protocol upgrade must be the first request on its connection")
        }
        return try await forward(request, route: route, claims: claims, context: context)
    }

    private func forward(_ request: Request, route: RouteTable.Route, claims: AccessTokenClaims?, context: Context) async throws -> Response {
        let configuration = route.configuration
        let pool = proxy.pools[route.index]
        var headers = proxy.upstreamHeaders(
            request.headers, claims: claims, route: configuration, peer: context.remoteAddress, authority: request.head.authority, requestID: context.requestID
        )
        let method = HTTPMethod(rawValue: request.method.rawValue)
        let hasBody = request.headers[.contentLength].map { $0 != "0" } ?? (request.headers[.transferEncoding] != nil)
        if hasBody, request.headers[.contentLength] == nil { headers.add(name: "Transfer-Encoding", value: "chunked") }
        let isIdempotent = [.GET, .HEAD, .OPTIONS, .PUT, .DELETE, .TRACE].contains(method)
        let timeouts = UpstreamConnection.Timeouts(configuration)
        let connections = proxy.connections
        var excluded: Int?
        var attempts = 0
        var retriedStaleConnection = false
        while attempts < 2, let (index, upstream) = pool.next(excluding: excluded) {
            attempts += 1
            let head = EdgeProxy.upstreamHead(
                method: method, path: request.uri.path, query: request.uri.query.map { $0[...] }, route: configuration, upstream: upstream, headers: headers
            )
            let body: LimitedBody<RequestBody>? = hasBody ? LimitedBody(base: request.body, limit: configuration.maxBody) : nil
            let key = UpstreamConnectionPool.Key(upstream)
            do {
                let (connection, reused) = try await connections.acquire(key, on: context.eventLoop, connectTimeout: .nanoseconds(configuration.connectTimeout.nanoseconds))
                let start: UpstreamResponseHandler.Start
                do {
                    start = try await withSpan("proxy.upstream", ofKind: .client) { span in
                        span.attributes["proxy.route"] = configuration.name
                        span.attributes["server.address"] = upstream.host
                        var head = head
                        // W3C traceparent: the upstream's spans join the request's trace.
                        InstrumentationSystem.instrument.inject(span.context, into: &head.headers, using: HTTPHeadersInjector())
                        return try await connection.exchange(head: head, body: body, timeouts: timeouts) { reusable in
                            connections.release(connection, reusable: reusable)
                        }
                    }
                } catch UpstreamError.connectionLost(beforeResponse: true) where reused && isIdempotent && !hasBody && !retriedStaleConnection {
                    // A kept-alive connection the upstream had closed meanwhile: once more on a fresh one.
                    retriedStaleConnection = true
                    attempts -= 1
                    continue
                }
                pool.markHealthy(index)
                return Response(
                    status: HTTPResponse.Status(code: Int(start.head.status.code), reasonPhrase: start.head.status.reasonPhrase),
                    headers: ProxyHeaders.clientHeaders(from: start.head.headers, requestID: context.requestID),
                    body: Self.responseBody(start.body)
                )
            } catch is LimitedBody<RequestBody>.TooLarge {
                context.logger.notice("request body over max_body", metadata: ["gw.upstream": "\(upstream)"])
                throw GoTrueError(.contentTooLarge, code: "request_entity_too_large", message: "Request body too large")
            } catch let error as UpstreamError where error.isTimeout {
                GatewayMetrics.upstreamError(route: configuration.name, kind: "timeout")
                context.logger.warning("upstream timed out", metadata: ["gw.upstream": "\(upstream)", "gw.error": "\(error)"])
                throw GoTrueError(.gatewayTimeout, code: "request_timeout", message: "The upstream did not answer in time")
            } catch let error as UpstreamError where error == .connectFailed || error == .connectTimeout {
                GatewayMetrics.upstreamError(route: configuration.name, kind: "connect")
                pool.markFailed(index)
                context.logger.warning("upstream failed", metadata: ["gw.upstream": "\(upstream)", "gw.error": "\(error)", "gw.attempt": "\(attempts)"])
                guard isIdempotent, !hasBody else { break }
                excluded = index
            } catch {
                GatewayMetrics.upstreamError(route: configuration.name, kind: "connection_lost")
                context.logger.warning("upstream failed", metadata: ["gw.upstream": "\(upstream)", "gw.error": "\(error)", "gw.attempt": "\(attempts)"])
                break
            }
        }
        throw GoTrueError(.badGateway, code: "bad_gateway", message: "The upstream could not be reached")
    }

    private static func responseBody(_ body: UpstreamResponseHandler.StartBody) -> ResponseBody {
        switch body {
        case .complete(let buffer): ResponseBody(byteBuffer: buffer)
        case .streaming(let sequence): ResponseBody(asyncSequence: sequence)
        }
    }

    /// Why a request's body length is ambiguous, or nil. NIO's parser already refuses `Content-Length`
    /// with `Transfer-Encoding`, repeated or listed `Content-Length`, and obs-fold; this adds what it lets
    /// through: a transfer coding other than exactly `chunked` (RFC 9112 §6.3: the length cannot be
    /// determined, so the request must be refused), and a `Content-Length` that is not a plain number.
    static func framingProblem(_ headers: HTTPFields) -> String? {
        let codings = headers[values: .transferEncoding].flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS.lowercased() }
        let lengths = headers[values: .contentLength]
        if !codings.isEmpty {
            guard codings == ["chunked"] else { return "transfer-encoding \(codings.joined(separator: ", ")) is not exactly chunked" }
            guard lengths.isEmpty else { return "both content-length and transfer-encoding" }
        }
        if lengths.count > 1 { return "more than one content-length" }
        if let length = lengths.first, length.isEmpty || !length.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            return "content-length is not a number"
        }
        return nil
    }
}

/// Writes trace context (W3C `traceparent`, `tracestate`) into an upstream request's headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
