#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import AsyncHTTPClient
public import AuthGateCore
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

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
        if let problem = Self.framingProblem(request.headers) {
            context.logger.notice("ambiguous request framing refused", metadata: ["gw.reason": "\(problem)"])
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Ambiguous request framing: \(problem)")
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > route.configuration.maxBody {
            throw GoTrueError(.contentTooLarge, code: "request_entity_too_large", message: "Request body too large")
        }
        let claims = try await proxy.authorize(bearer: RequestSupport.bearerToken(request), route: route.configuration, logger: context.logger)
        if WebSocketProxy.isWebSocketUpgrade(request.headers) {
            // Only a connection's first request can be upgraded (see WebSocketProxy); a later one
            // would reach the upstream stripped of its Upgrade header.
            throw GoTrueError(.badRequest, code: "validation_failed", message: "A protocol upgrade must be the first request on its connection")
        }
        return try await forward(request, route: route, claims: claims, context: context)
    }

    private func forward(_ request: Request, route: RouteTable.Route, claims: AccessTokenClaims?, context: Context) async throws -> Response {
        let pool = proxy.pools[route.index]
        let headers = proxy.upstreamHeaders(
            request.headers, claims: claims, route: route.configuration, peer: context.remoteAddress, authority: request.head.authority, requestID: context.requestID
        )
        let method = HTTPMethod(rawValue: request.method.rawValue)
        let hasBody = request.headers[.contentLength].map { $0 != "0" } ?? (request.headers[.transferEncoding] != nil)
        let isIdempotent = [.GET, .HEAD, .OPTIONS, .PUT, .DELETE, .TRACE].contains(method)
        var excluded: Int?
        for attempt in 0..<2 {
            guard let (index, upstream) = pool.next(excluding: excluded) else { break }
            var upstreamRequest = HTTPClientRequest(url: EdgeProxy.url(upstream, route: route.configuration, path: request.uri.path, query: request.uri.query))
            upstreamRequest.method = method
            upstreamRequest.headers = headers
            if hasBody {
                let length = request.headers[.contentLength].flatMap(Int64.init)
                let bodyLength: HTTPClientRequest.Body.Length = length.map { .known($0) } ?? .unknown
                upstreamRequest.body = .stream(LimitedBody(base: request.body, limit: route.configuration.maxBody), length: bodyLength)
            }
            do {
                let response = try await proxy.clients.client(forRoute: route.index).execute(upstreamRequest, deadline: .now() + .nanoseconds(route.configuration.timeout.nanoseconds))
                pool.markHealthy(index)
                return Response(
                    status: HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                    headers: ProxyHeaders.clientHeaders(from: response.headers, requestID: context.requestID),
                    body: ResponseBody(asyncSequence: response.body)
                )
            } catch {
                if error is LimitedBody<RequestBody>.TooLarge {
                    context.logger.notice("request body over max_body", metadata: ["gw.upstream": "\(upstream)"])
                    throw GoTrueError(.contentTooLarge, code: "request_entity_too_large", message: "Request body too large")
                }
                if Self.isTimeout(error) {
                    context.logger.warning("upstream timed out", metadata: ["gw.upstream": "\(upstream)"])
                    throw GoTrueError(.gatewayTimeout, code: "request_timeout", message: "The upstream did not answer in time")
                }
                pool.markFailed(index)
                context.logger.warning("upstream failed", metadata: ["gw.upstream": "\(upstream)", "gw.error": "\(type(of: error))", "gw.attempt": "\(attempt + 1)"])
                guard Self.isConnectFailure(error), isIdempotent, !hasBody else { break }
                excluded = index
            }
        }
        throw GoTrueError(.badGateway, code: "bad_gateway", message: "The upstream could not be reached")
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

    static func isTimeout(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError { return error == .deadlineExceeded || error == .readTimeout }
        return false
    }

    static func isConnectFailure(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError, error == .connectTimeout { return true }
        if error is NIOConnectionError { return true }
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED || error.errnoCode == EHOSTUNREACH || error.errnoCode == ENETUNREACH {
            return true
        }
        return false
    }
}
