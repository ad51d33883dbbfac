import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// A request for AuthGate's own endpoints, gathered whole before the router answers it.
struct GatheredRequest {
    let request: ApplicationRequest
    let version: HTTPVersion
    /// The client may send another request on the connection after this one.
    let keepAlive: Bool
    var body = ByteBuffer()
}

/// AuthGate's own endpoints served from the connection (``ApplicationPipeline``): the request is
/// gathered, the router answers it in one task, and the answer is written with one flush.
extension GatewayConnectionHandler {
    /// Starts gathering a request the router answers; its parts follow (an `end` at least).
    func gather(_ request: ApplicationRequest, version: HTTPVersion, keepAlive: Bool) {
        gathered = GatheredRequest(request: request, version: version, keepAlive: keepAlive)
        mode = .gathering
    }

    /// A part of the request being gathered.
    func gatherPart(_ part: HTTPServerRequestPart) {
        switch part {
        case .head:
            // A head before the last one's end: the stream is broken.
            closeNow()
        case .body(var buffer):
            // The decoder delivers no more than the `Content-Length` the pipeline accepted.
            guard var request = gathered, buffer.readableBytes <= ApplicationPipeline.maxBody - request.body.readableBytes else {
                closeNow()
                return
            }
            gathered = nil
            if request.body.readableBytes == 0 {
                request.body = buffer
            } else {
                request.body.writeBuffer(&buffer)
            }
            gathered = request
        case .end:
            connectionGuard?.requestEnded()
            answer()
        }
    }

    /// Asks the router for the gathered request's answer.
    private func answer() {
        guard let request = gathered, let application, let context else { return }
        gathered = nil
        mode = .answering
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let channel = context.channel
        Task(executorPreference: taskExecutor) {
            let (head, body) = await application.respond(to: request.request, body: request.body, channel: channel)
            eventLoop.execute {
                bound.value.answered(head, body, request)
            }
        }
    }

    /// Writes the router's answer in one flush, then takes the next request (or closes).
    private func answered(_ response: HTTPResponse, _ body: ByteBuffer, _ request: GatheredRequest) {
        guard mode == .answering, let context else { return }
        let closes = !request.keepAlive || closeAfterResponse
        let version = ProxyResponses.responseVersion(request.version)
        let connection: StaticString? = closes ? "close" : version == .http1_0 ? "keep-alive" : nil
        if let responseEncoder, responseEncoder.writeAnswer(response, body: body, version: version, date: date.current(), connection: connection) {
            // HTTP/1.x: the answer in one buffer, its head made from HTTPTypes' fields directly.
            context.flush()
        } else {
            writeAnswerParts(response, body, version: version, closes: closes, context: context)
        }
        connectionGuard?.responseEnded()
        if closes {
            closeAfterAnswer()
            return
        }
        mode = .idle
        processPending()
    }

    /// The answer as NIO's parts (an HTTP/2 stream's codec takes them), with the fields
    /// ``HTTP1ResponseEncoder/writeAnswer(_:body:version:date:connection:)`` adds.
    private func writeAnswerParts(_ response: HTTPResponse, _ body: ByteBuffer, version: HTTPVersion, closes: Bool, context: ChannelHandlerContext) {
        var head = HTTPResponseHead(response)
        head.version = version
        if !head.headers.contains(name: "Date") { head.headers.add(name: "Date", value: date.current()) }
        if closes {
            head.headers.replaceOrAdd(name: "Connection", value: "close")
        } else if head.version == .http1_0 {
            head.headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Ends the connection at once: its request stream cannot be followed.
    private func closeNow() {
        gathered = nil
        mode = .closed
        context?.close(promise: nil)
    }
}
