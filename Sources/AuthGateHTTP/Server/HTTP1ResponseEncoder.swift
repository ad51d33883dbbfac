import HTTPTypes
import NIOCore
import NIOHTTP1

/// Writes an HTTP/1.x connection's responses as bytes, framed as ``HTTP1ResponseFraming`` decides,
/// in place of NIO's `HTTPResponseEncoder`.
///
/// A response written whole (the router's answers, the gateway's own, small proxied ones) leaves
/// as one buffer: the head is held until the next write or flush, and a small body and the end
/// join it (`maxJoinedBody`). NIO's encoder sent it as three buffers through the rest of the
/// pipeline and the socket's vector write, and wrote each field in four calls; here the head is
/// one pass over bytes reserved once. A write with a promise, a large body and a file region are
/// written as they are, after what is held. A head with a malformed field (``HTTP1ResponseFraming``)
/// is not written: its promise fails, the connection closes, and the rest of that response is
/// refused. The body of an answer that may have none (`HEAD`, `CONNECT`, 1xx, 204, 304) is
/// refused (`responseBodyNotAllowed`), its head and end written.
///
/// ``GatewayConnectionHandler`` tells it each request's method as the request arrives
/// (``requestArrived(_:)``), which NIO's decoder told NIO's encoder.
final class HTTP1ResponseEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = IOData

    /// The largest body joined to the head it follows; a larger one is written as it is.
    static let maxJoinedBody = 16 * 1024

    /// The room a held head leaves after it, for a body to join without the buffer growing: the
    /// gateway's own answers are JSON of a few hundred bytes to about 2 KiB.
    static let bodyRoom = 2048

    private var framing = HTTP1ResponseFraming()
    /// Bytes encoded and not yet passed on (a head, with what joined it).
    private var held: ByteBuffer?
    /// The current response's head was refused: its body and end are refused too.
    private var refused = false
    /// Set while the encoder is in a pipeline: ``writeAnswer(_:body:version:date:connection:)`` writes from it.
    private var context: ChannelHandlerContext?

    /// A request arrived with `method`: its answer is framed for it (no body for `HEAD`).
    func requestArrived(_ method: HTTPMethod) {
        framing.requestArrived(method)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            passHeld(context)
            var buffer = context.channel.allocator.buffer(capacity: 0)
            do {
                // A held head has room for a small body to join it without growing.
                try framing.writeHead(head, into: &buffer, bodyRoom: promise == nil ? Self.bodyRoom : 0)
            } catch {
                refused = true
                promise?.fail(error)
                context.close(promise: nil)
                return
            }
            refused = false
            if promise == nil {
                held = buffer
            } else {
                context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
            }
        case .body(let part):
            if refused || framing.body == .suppressed {
                // No bytes for a body that must not be sent (RFC 9112 §6.3); the head and the end
                // still make a whole response. An empty part is no body: it completes.
                if !refused, part.readableBytes == 0 {
                    promise?.succeed()
                } else {
                    promise?.fail(NIOHTTPResponseEncoderError.responseBodyNotAllowed)
                }
                return
            }
            writeBody(part, context: context, promise: promise)
        case .end(let trailers):
            guard !refused else {
                promise?.fail(HTTP1ResponseFraming.MalformedField())
                return
            }
            if framing.body == .chunked {
                var buffer = held ?? context.channel.allocator.buffer(capacity: 8)
                held = nil
                buffer.writeStaticString("0\r\n")
                if let trailers {
                    // The same rule as the head's fields; a malformed trailer ends the connection
                    // (and what was held with it is dropped).
                    do {
                        try HTTP1ResponseFraming.writeFields(trailers, into: &buffer)
                    } catch {
                        framing.responseEnded()
                        promise?.fail(error)
                        context.close(promise: nil)
                        return
                    }
                } else {
                    buffer.writeStaticString("\r\n")
                }
                framing.responseEnded()
                context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
                return
            }
            framing.responseEnded()
            if let buffer = held {
                held = nil
                context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
            } else if let promise {
                // Nothing to write, and the promise completes in order behind what went before.
                context.write(wrapOutboundOut(.byteBuffer(ByteBuffer())), promise: promise)
            }
        }
    }

    func flush(context: ChannelHandlerContext) {
        passHeld(context)
        context.flush()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // Removed after a `101` (a WebSocket tunnel), whose head went with its flush; anything
        // still held goes before the bytes that follow.
        passHeld(context)
        self.context = nil
    }

    /// Writes one of the gateway's own answers whole, in one buffer: its head straight from
    /// HTTPTypes' fields (with `date` when it has no `Date`, and `connection` in place of its
    /// `Connection`), framed as any head is, and `body`. It is written as the same answer written
    /// as parts through the pipeline would be, without making NIO's head of it or passing three
    /// parts down; the caller flushes. False, and nothing written, when the encoder is not in a
    /// pipeline.
    func writeAnswer(_ response: HTTPResponse, body: ByteBuffer, version: HTTPVersion, date: String, connection: StaticString?) -> Bool {
        guard let context else { return false }
        passHeld(context)
        var buffer = context.channel.allocator.buffer(capacity: 0)
        do {
            try framing.writeHead(
                code: response.status.code, reason: response.status.reasonPhrase, version: version, fields: response.headerFields,
                name: \.name.rawName, value: \.value, added: .init(date: date, connection: connection), into: &buffer,
                bodyRoom: body.readableBytes + 16)
        } catch {
            context.close(promise: nil)
            return true
        }
        refused = false
        var body = body
        if framing.body != .suppressed { appendBody(&body, into: &buffer) }
        if framing.body == .chunked { buffer.writeStaticString("0\r\n\r\n") }
        framing.responseEnded()
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
        return true
    }

    /// A body part, joined to the held head when small and nobody waits on it.
    private func writeBody(_ part: IOData, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let size = part.readableBytes
        let chunked = framing.body == .chunked
        if case .byteBuffer(var bytes) = part, promise == nil, var buffer = held, size <= Self.maxJoinedBody {
            held = nil
            appendBody(&bytes, into: &buffer)
            held = buffer
            return
        }
        passHeld(context)
        guard chunked, size > 0 else {
            // An empty part is not a chunk (it would end the body); it still completes in order.
            context.write(wrapOutboundOut(part), promise: promise)
            return
        }
        var sizeLine = context.channel.allocator.buffer(capacity: 12)
        Self.writeChunkSize(size, into: &sizeLine)
        context.write(wrapOutboundOut(.byteBuffer(sizeLine)), promise: nil)
        context.write(wrapOutboundOut(part), promise: nil)
        context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "\r\n"))), promise: promise)
    }

    /// `part` appended to `buffer` as the current framing writes it: a chunk (its size line, the
    /// bytes and CRLF) when chunked and not empty (an empty chunk would end the body), the bytes
    /// as they are otherwise.
    private func appendBody(_ part: inout ByteBuffer, into buffer: inout ByteBuffer) {
        let chunk = framing.body == .chunked && part.readableBytes > 0
        if chunk { Self.writeChunkSize(part.readableBytes, into: &buffer) }
        buffer.writeBuffer(&part)
        if chunk { buffer.writeStaticString("\r\n") }
    }

    /// Passes on what is held, behind everything written before it.
    private func passHeld(_ context: ChannelHandlerContext) {
        guard let buffer = held else { return }
        held = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
    }

    /// A chunk's size line: hexadecimal digits and CRLF.
    private static func writeChunkSize(_ size: Int, into buffer: inout ByteBuffer) {
        buffer.writeString(String(size, radix: 16))
        buffer.writeStaticString("\r\n")
    }
}

@available(*, unavailable)
extension HTTP1ResponseEncoder: Sendable {}
