import FuzzSupport
import NIOCore
import NIOEmbedded
import NIOHTTP1

@testable import AuthGateHTTP

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzResponseFraming_main")
public func fuzzResponseFramingMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzResponseFraming(data, size) }
}

/// An answer the gateway writes on an HTTP/1.x connection (``HTTP1ResponseEncoder``), as a relayed
/// upstream's answer reaches it: the request's method, any status code and reason phrase, any
/// fields, a body in one or two parts, with or without `Content-Length`, `Transfer-Encoding:
/// chunked` and a trailer.
///
/// Input: a control byte (bits 0-1 the method: GET, HEAD, POST, CONNECT; bit 2 HTTP/1.0; bit 3 a
/// right `Content-Length`; bit 4 `Transfer-Encoding: chunked`; bit 5 the body in two parts; bit 6
/// a trailer), two bytes of status code (modulo 1000), a byte for the number of fields (modulo 8),
/// then NUL-separated fields: the reason phrase, each field's name and value, and the body (the
/// rest). The input's own framing fields are left out: the harness sets them, right.
///
/// Properties: never a trap. When a name is not a token, or the reason or a value holds a byte
/// RFC 9110 does not allow there, nothing at all is written and the connection closes. Otherwise,
/// read back by NIO's HTTP/1.1 client (llhttp, told the request's method, to the end of input),
/// the bytes are exactly one response: its status code, every field in order with its value (as
/// a reader trims it), the body (none for `HEAD`, 204, 304), the trailer, nothing after it; a 1xx
/// is one head alone. And where NIO's encoder and this one frame alike (no body refused, no
/// HTTP/1.0 `Transfer-Encoding`), the bytes are NIO's.
public func fuzzResponseFraming(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let control = input.byte()
    let method: HTTPMethod = [.GET, .HEAD, .POST, .CONNECT][Int(control & 3)]
    let version: HTTPVersion = control & 4 != 0 ? .http1_0 : .http1_1
    let code = (Int(input.byte()) << 8 | Int(input.byte())) % 1000
    let fieldCount = Int(input.byte() % 8)
    let reason = input.text()
    var fields: [(String, String)] = []
    for _ in 0..<fieldCount where !input.isEmpty {
        let name = input.text()
        let value = input.text()
        guard !["content-length", "transfer-encoding"].contains(name.lowercased()) else { continue }
        fields.append((name, value))
    }
    let body = input.rest()
    var headers = HTTPHeaders(fields)
    if control & 8 != 0 { headers.add(name: "Content-Length", value: String(body.count)) }
    if control & 16 != 0 { headers.add(name: "Transfer-Encoding", value: "chunked") }
    let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: code, reasonPhrase: reason), headers: headers)
    let parts = control & 32 != 0 ? [Array(body.prefix(body.count / 2)), Array(body.dropFirst(body.count / 2))] : [body]
    let trailers: HTTPHeaders? = control & 64 != 0 ? ["X-Trailer": "t"] : nil

    let (written, open) = ResponseFramingCheck.encode(head, parts, trailers, method: method, through: HTTP1ResponseEncoder())
    // NIO names a code it knows its own way; the reason written is the head's.
    let valid = ResponseFramingCheck.isLegal(head.status.reasonPhrase, fields)
    guard valid else {
        fuzzCheck(written.isEmpty && !open, "a malformed head was written or left the connection open: \(written.count) bytes")
        return 0
    }
    fuzzCheck(open, "a well-formed head closed the connection")
    let status = HTTPResponseStatus(statusCode: code)
    let bodiless = method == .HEAD || method == .CONNECT || !status.mayHaveResponseBody
    if !bodiless, !(version == .http1_0 && control & 16 != 0) {
        let nio = ResponseFramingCheck.encode(head, parts, trailers, method: nil, through: HTTPResponseEncoder()).bytes
        fuzzCheck(written == nio, "bytes differ from NIO's encoder's")
    }
    if (100..<200).contains(code) {
        let end = ResponseFramingCheck.firstBlankLine(in: written)
        fuzzCheck(end != nil && end == written.count, "a 1xx is not its head alone: \(written.count) bytes, head ends at \(String(describing: end))")
        return 0
    }
    guard code >= 200, method != .CONNECT else { return 0 }
    let expectedBody = method == .HEAD || code == 204 || code == 304 ? [] : body
    ResponseFramingCheck.readBack(
        written, method: method, code: code, fields: fields, body: expectedBody,
        trailers: trailers != nil && !bodiless && control & 8 == 0 && version == .http1_1)
    return 0
}

/// The harness's own view of a well-formed answer, and NIO's client reading the bytes back.
enum ResponseFramingCheck {
    /// The client's address the embedded connection is connected to.
    static let peer = try? SocketAddress(ipAddress: "127.0.0.1", port: 1)

    /// `head`, the body `parts` and the end with `trailers` through `encoder` (told `method` when
    /// it is ours): the bytes written, and whether the connection stayed open.
    static func encode(
        _ head: HTTPResponseHead, _ parts: [[UInt8]], _ trailers: HTTPHeaders?, method: HTTPMethod?, through encoder: any ChannelHandler
    ) -> (bytes: [UInt8], open: Bool) {
        let channel = EmbeddedChannel(handler: encoder)
        // Connected, as a client's connection is: only then does a close show (`isActive`).
        if let peer { _ = channel.connect(to: peer) }
        if let ours = encoder as? HTTP1ResponseEncoder, let method { ours.requestArrived(method) }
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        for part in parts { channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: part))), promise: nil) }
        channel.writeAndFlush(HTTPServerResponsePart.end(trailers), promise: nil)
        var bytes: [UInt8] = []
        while case .byteBuffer(let buffer)? = try? channel.readOutbound(as: IOData.self) { bytes += buffer.readableBytesView }
        let open = channel.isActive
        _ = try? channel.finish()
        return (bytes, open)
    }

    /// RFC 9110's rules, written apart from the encoder's: names are tokens, the reason and the
    /// values hold HTAB, SP, visible ASCII and obs-text only.
    static func isLegal(_ reason: String, _ fields: [(String, String)]) -> Bool {
        let tokenSymbols = Array("!#$%&'*+-.^_`|~".utf8)
        func isText(_ text: String) -> Bool { text.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) || $0 >= 0x80 } }
        func isToken(_ text: String) -> Bool {
            !text.isEmpty
                && text.utf8.allSatisfy { byte in
                    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || tokenSymbols.contains(byte)
                }
        }
        return isText(reason) && fields.allSatisfy { isToken($0.0) && isText($0.1) }
    }

    /// Where the first blank line (CRLF CRLF) in `bytes` ends.
    static func firstBlankLine(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    /// Reads `bytes` as NIO's HTTP/1.1 client does after sending a `method` request, to the end
    /// of input, and checks they are exactly the answer meant.
    static func readBack(_ bytes: [UInt8], method: HTTPMethod, code: Int, fields: [(String, String)], body: [UInt8], trailers: Bool) {
        let client = EmbeddedChannel()
        do {
            try client.pipeline.syncOperations.addHTTPClientHandlers()
            try client.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: "/")))
            try client.writeOutbound(HTTPClientRequestPart.end(nil))
            while (try client.readOutbound(as: IOData.self)) != nil {}
            try client.writeInbound(ByteBuffer(bytes: bytes))
        } catch {
            fuzzCheck(false, "NIO's client refused the bytes: \(error)")
        }
        _ = try? client.finish()
        var received: [HTTPClientResponsePart] = []
        while let part = try? client.readInbound(as: HTTPClientResponsePart.self) { received.append(part) }
        guard case .head(let head)? = received.first, case .end(let end)? = received.last else {
            fuzzCheck(false, "not one whole response: \(received)")
            return
        }
        fuzzCheck(Int(head.status.code) == code, "status \(head.status.code), not \(code)")
        let framing: Set<String> = ["content-length", "transfer-encoding"]
        let read = head.headers.filter { !framing.contains($0.name.lowercased()) }.map { [$0.name, trimmed($0.value)] }
        let sent = fields.map { [$0.0, trimmed($0.1)] }
        fuzzCheck(read == sent, "fields read back \(read), sent \(sent)")
        var readBody: [UInt8] = []
        for part in received.dropFirst().dropLast() {
            guard case .body(let buffer) = part else {
                fuzzCheck(false, "a second head: \(received)")
                return
            }
            readBody += buffer.readableBytesView
        }
        fuzzCheck(readBody == body, "body of \(readBody.count) bytes read back, \(body.count) sent")
        fuzzCheck((end?.first(name: "X-Trailer") == "t") == trailers, "trailer read back: \(String(describing: end))")
    }

    /// A field value as RFC 9110 §5.5 reads it: without the spaces and tabs around it (a reader may
    /// keep trailing ones; NIO's does).
    static func trimmed(_ value: String) -> String {
        var bytes = Substring(value).utf8[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
