import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Testing

@testable import AuthGateHTTP

/// HTTP/1.x responses as bytes: NIO's framing to the byte, a whole answer in one buffer, no body
/// for `HEAD`, and no head with a field that could split the response.
@Suite("HTTP/1 response encoder")
struct HTTP1ResponseEncoderTests {
    /// A response as its parts.
    struct Response {
        var head: HTTPResponseHead
        var body: [String] = []
        var trailers: HTTPHeaders?
    }

    private func head(_ status: HTTPResponseStatus, _ fields: [(String, String)] = [], version: HTTPVersion = .http1_1) -> HTTPResponseHead {
        HTTPResponseHead(version: version, status: status, headers: HTTPHeaders(fields))
    }

    /// Writes `responses` through `handler` (each part without a promise, a flush after each
    /// response) and returns the buffers that left it.
    private func buffers(_ responses: [Response], through handler: any ChannelHandler, methods: [HTTPMethod] = []) throws -> [ByteBuffer] {
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }
        if let encoder = handler as? HTTP1ResponseEncoder { methods.forEach(encoder.requestArrived) }
        for response in responses {
            channel.write(HTTPServerResponsePart.head(response.head), promise: nil)
            for part in response.body { channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: part))), promise: nil) }
            channel.writeAndFlush(HTTPServerResponsePart.end(response.trailers), promise: nil)
        }
        var out: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let bytes) = buffer else { continue }
            out.append(bytes)
        }
        return out
    }

    /// An embedded channel through `handler`, connected (active) as a client's connection is.
    private func connected(_ handler: any ChannelHandler) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let open = !isClosed(channel)
        #expect(open)
        return channel
    }

    /// Whether `channel` closed. Expectations are on the Bool it gives, kept apart: a failed
    /// expectation describes each value in its expression, and NIO's description of an embedded
    /// channel's pipeline traps.
    private func isClosed(_ channel: EmbeddedChannel) -> Bool {
        !channel.isActive
    }

    private func text(_ buffers: [ByteBuffer]) -> String {
        buffers.map { String(buffer: $0) }.joined()
    }

    /// Responses of every framing NIO's encoder knows: `Content-Length`, chunked (added, or
    /// asked for), HTTP/1.0 up to the close, statuses without a body, trailers, empty parts.
    private var framingCases: [[Response]] {
        [
            [Response(head: head(.ok, [("Content-Type", "application/json"), ("Content-Length", "2")]), body: ["{}"])],
            [Response(head: head(.ok, [("Content-Length", "5"), ("Transfer-Encoding", "chunked")]), body: ["hel", "lo"])],
            [Response(head: head(.ok, [("X-A", "1")]), body: ["hello", "", "world"])],
            [Response(head: head(.ok, [("Transfer-Encoding", "chunked")]), body: ["abc"], trailers: HTTPHeaders([("X-Sum", "9")]))],
            [Response(head: head(.ok, [("X-A", "1")], version: .http1_0), body: ["raw"])],
            [Response(head: head(.noContent, [("Content-Length", "0"), ("Transfer-Encoding", "chunked")]))],
            [Response(head: head(.notModified, [("ETag", "\"x\"")]))],
            [Response(head: head(.continue)), Response(head: head(.created, [("Location", "/a"), ("Content-Length", "0")]))],
            [Response(head: head(.custom(code: 299, reasonPhrase: "Fine Thanks"), [("a", "b")]), body: [String(repeating: "z", count: 70_000)])],
            [Response(head: head(.custom(code: 599, reasonPhrase: "")), body: ["x"])],
            [
                Response(head: head(.ok, [("Content-Length", "1")]), body: ["a"]),
                Response(head: head(.notFound, [("Content-Length", "2"), ("Connection", "close")]), body: ["no"])
            ]
        ]
    }

    @Test("every framing is NIO's encoder's, byte for byte")
    func sameBytesAsNIO() throws {
        for responses in framingCases {
            let ours = text(try buffers(responses, through: HTTP1ResponseEncoder()))
            let nio = text(try buffers(responses, through: HTTPResponseEncoder()))
            #expect(ours == nio, "\(responses.map(\.head.status))")
        }
    }

    @Test("a whole answer leaves as one buffer; a large body is passed as it is, after its head")
    func wholeAnswerOneBuffer() throws {
        let small = [Response(head: head(.ok, [("Content-Length", "2")]), body: ["{}"])]
        let out = try buffers(small, through: HTTP1ResponseEncoder())
        #expect(out.count == 1)
        #expect(text(out) == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        let chunked = [Response(head: head(.ok), body: ["abc"])]
        let chunkedOut = try buffers(chunked, through: HTTP1ResponseEncoder())
        #expect(chunkedOut.count == 1)
        #expect(text(chunkedOut) == "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        let large = String(repeating: "y", count: HTTP1ResponseEncoder.maxJoinedBody + 1)
        let largeOut = try buffers(
            [Response(head: head(.ok, [("Content-Length", "\(large.utf8.count)")]), body: [large])], through: HTTP1ResponseEncoder())
        #expect(largeOut.map(\.readableBytes).last == large.utf8.count)
        #expect(largeOut.count == 2)
    }

    @Test("a write with a promise is passed at once, behind what is held, and its promise completes")
    func promisesInOrder() throws {
        let channel = EmbeddedChannel(handler: HTTP1ResponseEncoder())
        defer { _ = try? channel.finish() }
        channel.write(HTTPServerResponsePart.head(head(.ok, [("Content-Length", "4")])), promise: nil)
        let body = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "body"))), promise: body)
        let end = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: end)
        try body.futureResult.wait()
        try end.futureResult.wait()
        let parts = [try channel.readOutbound(as: IOData.self), try channel.readOutbound(as: IOData.self)]
        let texts = parts.compactMap { part -> String? in
            guard case .byteBuffer(let bytes) = part else { return nil }
            return String(buffer: bytes)
        }
        #expect(texts == ["HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", "body"])
    }

    @Test("an answer to HEAD keeps its framing fields and carries no body; the next request's answer does, 1xx take no method")
    func headRequests() throws {
        let encoder = HTTP1ResponseEncoder()
        let channel = EmbeddedChannel(handler: encoder)
        defer { _ = try? channel.finish() }
        encoder.requestArrived(.HEAD)
        encoder.requestArrived(.GET)
        channel.write(HTTPServerResponsePart.head(head(.continue)), promise: nil)
        channel.write(HTTPServerResponsePart.head(head(.ok, [("Content-Length", "5")])), promise: nil)
        let refused = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "hello"))), promise: refused)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
        #expect(throws: NIOHTTPResponseEncoderError.responseBodyNotAllowed) { try refused.futureResult.wait() }
        channel.write(HTTPServerResponsePart.head(head(.ok)), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "hi"))), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
        var written = ""
        while let part = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let bytes) = part { written += String(buffer: bytes) }
        }
        #expect(
            written
                == "HTTP/1.1 100 Continue\r\n\r\n" + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
                + "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
    }

    @Test("a status without content (1xx, 204, 304) gets no body bytes, whatever is written after its head; an empty part completes")
    func bodilessStatuses() throws {
        for status in [HTTPResponseStatus.noContent, .notModified, .continue, .custom(code: 199, reasonPhrase: "x")] {
            let channel = EmbeddedChannel(handler: HTTP1ResponseEncoder())
            channel.write(HTTPServerResponsePart.head(head(status, [("Content-Length", "5"), ("X-A", "1")])), promise: nil)
            let refused = channel.eventLoop.makePromise(of: Void.self)
            channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n"))), promise: refused)
            let empty = channel.eventLoop.makePromise(of: Void.self)
            channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer())), promise: empty)
            channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
            #expect(throws: NIOHTTPResponseEncoderError.responseBodyNotAllowed) { try refused.futureResult.wait() }
            try empty.futureResult.wait()
            var written = ""
            while case .byteBuffer(let bytes) = try channel.readOutbound(as: IOData.self) { written += String(buffer: bytes) }
            #expect(written == "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nX-A: 1\r\n\r\n")
            _ = try? channel.finish()
        }
    }

    @Test("an HTTP/1.0 answer carries no Transfer-Encoding: its body is read to the close")
    func http10WithoutCoding() throws {
        let response = Response(head: head(.ok, [("Transfer-Encoding", "chunked"), ("X-A", "1")], version: .http1_0), body: ["raw"])
        #expect(text(try buffers([response], through: HTTP1ResponseEncoder())) == "HTTP/1.0 200 OK\r\nX-A: 1\r\n\r\nraw")
    }

    @Test("HTAB, visible ASCII and obs-text are written as they are")
    func legalValueBytes() throws {
        let value = "a\tb ~ \u{E9}\u{2603}"
        let out = text(try buffers([Response(head: head(.ok, [("X-V", value), ("Content-Length", "0")]))], through: HTTP1ResponseEncoder()))
        #expect(out == "HTTP/1.1 200 OK\r\nX-V: \(value)\r\nContent-Length: 0\r\n\r\n")
    }

    @Test("an answer to CONNECT loses Content-Length and Transfer-Encoding and carries no body")
    func connectRequests() throws {
        let response = Response(head: head(.ok, [("Content-Length", "3"), ("Transfer-Encoding", "chunked"), ("X-A", "1")]), body: ["abc"])
        #expect(text(try buffers([response], through: HTTP1ResponseEncoder(), methods: [.CONNECT])) == "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n")
    }

    @Test(
        "a field that could split the response: nothing is written, the promise fails, the connection closes, the rest of the answer is refused",
        arguments: [
            ("X-Evil", "a\r\nSet-Cookie: s=1"), ("X-Evil", "a\nb"), ("X-Evil", "a\rb"), ("X-Evil", "a\u{0}b"), ("X-Evil", "a\u{7F}b"),
            ("X-Evil", "a\u{1B}[2Jb"), ("Bad Name", "v"), ("Bad:Name", "v"),
            ("", "v"), ("X-\r\nInjected", "v"), ("Ünicode", "v")
        ])
    func malformedFieldRefused(field: (String, String)) throws {
        let channel = try connected(HTTP1ResponseEncoder())
        let headWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPServerResponsePart.head(head(.ok, [("Content-Length", "2"), field])), promise: headWritten)
        let bodyWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "{}"))), promise: bodyWritten)
        let endWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: endWritten)
        #expect(throws: HTTP1ResponseFraming.MalformedField.self) { try headWritten.futureResult.wait() }
        #expect(throws: (any Error).self) { try bodyWritten.futureResult.wait() }
        #expect(throws: (any Error).self) { try endWritten.futureResult.wait() }
        let channelClosed = isClosed(channel)
        #expect(channelClosed)
        #expect(try channel.readOutbound(as: IOData.self) == nil)
    }

    @Test("a reason phrase or a trailer with CR or LF is refused as a field is")
    func malformedReasonAndTrailer() throws {
        let reason = try connected(HTTP1ResponseEncoder())
        let headWritten = reason.eventLoop.makePromise(of: Void.self)
        reason.writeAndFlush(HTTPServerResponsePart.head(head(.custom(code: 200, reasonPhrase: "OK\r\nX: y"))), promise: headWritten)
        #expect(throws: HTTP1ResponseFraming.MalformedField.self) { try headWritten.futureResult.wait() }
        #expect(try reason.readOutbound(as: IOData.self) == nil)
        let reasonClosed = isClosed(reason)
        #expect(reasonClosed)

        let trailer = try connected(HTTP1ResponseEncoder())
        trailer.write(HTTPServerResponsePart.head(head(.ok)), promise: nil)
        let endWritten = trailer.eventLoop.makePromise(of: Void.self)
        trailer.writeAndFlush(HTTPServerResponsePart.end(HTTPHeaders([("X-Sum", "1\r\n\r\nHTTP/1.1 200 OK")])), promise: endWritten)
        #expect(throws: HTTP1ResponseFraming.MalformedField.self) { try endWritten.futureResult.wait() }
        let trailerClosed = isClosed(trailer)
        #expect(trailerClosed)
    }

    @Test("a whole answer written from HTTPTypes is, byte for byte, the same answer written as NIO's parts with Date and Connection added")
    func answerSameAsParts() throws {
        var withFields = HTTPResponse(status: .ok)
        withFields.headerFields = [.contentType: "application/json", .contentLength: "2", .connection: "keep-alive", .init("X-Request-Id")!: "r1"]
        var dated = HTTPResponse(status: .notFound)
        dated.headerFields = [.date: "Sun, 29 Nov 2026 02:00:00 GMT", .contentLength: "2"]
        let unframed = HTTPResponse(status: .init(code: 299, reasonPhrase: "Fine"))
        let noContent = HTTPResponse(status: .noContent, headerFields: [.contentLength: "2"])
        let date = "Sun, 29 Nov 2026 03:00:00 GMT"
        for response in [withFields, dated, unframed, noContent] {
            for (version, connection) in [(HTTPVersion.http1_1, nil), (.http1_1, "close"), (.http1_0, "keep-alive"), (.http1_0, "close")]
                as [(HTTPVersion, StaticString?)]
            {
                for body in ["", "{}"] {
                    for method in [HTTPMethod.GET, .HEAD] {
                        let direct = HTTP1ResponseEncoder()
                        let directChannel = EmbeddedChannel(handler: direct)
                        direct.requestArrived(method)
                        #expect(direct.writeAnswer(response, body: ByteBuffer(string: body), version: version, date: date, connection: connection))
                        directChannel.flush()
                        var viaParts = HTTPResponseHead(response)
                        viaParts.version = version
                        if !viaParts.headers.contains(name: "Date") { viaParts.headers.add(name: "Date", value: date) }
                        if let connection { viaParts.headers.replaceOrAdd(name: "Connection", value: "\(connection)") }
                        let partsEncoder = HTTP1ResponseEncoder()
                        let partsChannel = EmbeddedChannel(handler: partsEncoder)
                        partsEncoder.requestArrived(method)
                        partsChannel.write(HTTPServerResponsePart.head(viaParts), promise: nil)
                        if !body.isEmpty, method != .HEAD {
                            partsChannel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: body))), promise: nil)
                        }
                        partsChannel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
                        var written: [[ByteBuffer]] = [[], []]
                        for (index, channel) in [directChannel, partsChannel].enumerated() {
                            while case .byteBuffer(let bytes) = try channel.readOutbound(as: IOData.self) { written[index].append(bytes) }
                        }
                        #expect(written[0].count == 1)
                        #expect(text(written[0]) == text(written[1]), "\(response.status) \(version) \(String(describing: connection)) \(method)")
                        _ = try? directChannel.finish()
                        _ = try? partsChannel.finish()
                    }
                }
            }
        }
    }

    @Test("a whole answer with a malformed field is not written and the connection closes; an encoder out of a pipeline writes nothing")
    func answerMalformedOrDetached() throws {
        let encoder = HTTP1ResponseEncoder()
        #expect(!encoder.writeAnswer(HTTPResponse(status: .ok), body: ByteBuffer(), version: .http1_1, date: "d", connection: nil))
        let channel = try connected(encoder)
        #expect(encoder.writeAnswer(HTTPResponse(status: .ok), body: ByteBuffer(string: "x"), version: .http1_1, date: "a\r\nb", connection: nil))
        let channelClosed = isClosed(channel)
        #expect(channelClosed)
        #expect(try channel.readOutbound(as: IOData.self) == nil)
    }

    @Test("the framing state: each final head takes the oldest method; a malformed head takes none and writes nothing")
    func framingState() throws {
        var framing = HTTP1ResponseFraming()
        framing.requestArrived(.HEAD)
        framing.requestArrived(.POST)
        var buffer = ByteBuffer(string: "before")
        #expect(throws: HTTP1ResponseFraming.MalformedField.self) {
            try framing.writeHead(head(.ok, [("X", "a\nb")]), into: &buffer)
        }
        #expect(String(buffer: buffer) == "before")
        try framing.writeHead(head(.ok, [("Content-Length", "0")]), into: &buffer)
        #expect(framing.body == .suppressed)
        framing.responseEnded()
        try framing.writeHead(head(.ok), into: &buffer)
        #expect(framing.body == .chunked)
        framing.responseEnded()
        try framing.writeHead(head(.ok, [("Content-Length", "1")]), into: &buffer)
        #expect(framing.body == .identity)
    }
}
