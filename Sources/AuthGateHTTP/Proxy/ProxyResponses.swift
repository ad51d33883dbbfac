import HTTPTypes
import NIOCore
import NIOHTTP1

/// Every answer the proxy writes itself (refusals, 413, 502, 504), rendered in one place, in
/// GoTrue's error shapes (``GoTrueError``), with the request id and `Connection: close` when the
/// connection ends after it.
enum ProxyResponses {
    /// The head and body answering `refusal`.
    static func render(_ refusal: ProxyRefusal, closes: Bool) -> (HTTPResponseHead, ByteBuffer) {
        let extraHeaders = refusal.headers + (refusal.context.cors ?? [])
        if refusal.status == .noContent {
            // A CORS preflight's answer: its headers, no body (and no Content-Length, RFC 9110 8.6).
            var headers = HTTPHeaders(extraHeaders)
            headers.add(name: "X-Request-Id", value: refusal.context.requestID)
            if closes { headers.add(name: "Connection", value: "close") }
            return (HTTPResponseHead(version: responseVersion(refusal.context.version), status: .noContent, headers: headers), ByteBuffer())
        }
        let error = GoTrueError(HTTPResponse.Status(code: Int(refusal.status.code)), code: refusal.code, message: refusal.message)
        return render(error, extraHeaders: extraHeaders, context: refusal.context, closes: closes)
    }

    /// The head and body answering an exchange's `failure`.
    static func render(_ failure: ProxyExchangeStateMachine.Failure, context: ProxyRequestContext, closes: Bool) -> (HTTPResponseHead, ByteBuffer) {
        render(error(for: failure), extraHeaders: context.cors ?? [], context: context, closes: closes)
    }

    /// The stable reason of `failure` for the access line.
    static func reason(_ failure: ProxyExchangeStateMachine.Failure) -> String {
        switch failure {
        case .bodyTooLarge: "body_too_large"
        case .unparsableBody: "body_parse_error"
        case .badGateway(let error), .gatewayTimeout(let error): "upstream_\(error.metricKind)"
        case .tunnelLimitReached: "websocket_tunnel_limit"
        }
    }

    private static func error(for failure: ProxyExchangeStateMachine.Failure) -> GoTrueError {
        switch failure {
        case .bodyTooLarge: GoTrueError(.contentTooLarge, code: "request_entity_too_large", message: "Request body too large")
        case .unparsableBody: RequestSupport.unparsableBody
        case .badGateway: GoTrueError(.badGateway, code: "bad_gateway", message: "The upstream could not be reached")
        case .gatewayTimeout: GoTrueError(.gatewayTimeout, code: "request_timeout", message: "The upstream did not answer in time")
        case .tunnelLimitReached:
            GoTrueError(.serviceUnavailable, code: "websocket_tunnel_limit", message: "Too many WebSocket connections are open; try again later")
        }
    }

    private static func render(_ error: GoTrueError, extraHeaders: [(String, String)], context: ProxyRequestContext, closes: Bool) -> (
        HTTPResponseHead, ByteBuffer
    ) {
        var headers = HTTPHeaders()
        let body: ByteBuffer
        if let (fields, data) = try? error.encoded(apiVersion: context.apiVersion, requestID: context.requestID) {
            headers.add(contentsOf: fields)
            body = ByteBuffer(bytes: data)
        } else {
            body = ByteBuffer()
        }
        headers.add(contentsOf: extraHeaders)
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "X-Request-Id", value: context.requestID)
        if closes { headers.add(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: error.status.code, reasonPhrase: error.status.reasonPhrase)
        return (
            HTTPResponseHead(version: responseVersion(context.version), status: status, headers: headers), body
        )
    }

    /// The version of the gateway's own answer to a request of `version`: HTTP/1.0 to an HTTP/1.0
    /// client, HTTP/1.1 otherwise (an HTTP/2 stream's codec ignores it).
    static func responseVersion(_ version: HTTPVersion) -> HTTPVersion {
        version.major == 1 && version.minor == 0 ? .http1_0 : .http1_1
    }
}
