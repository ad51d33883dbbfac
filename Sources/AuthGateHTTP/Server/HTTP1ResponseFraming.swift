import AuthGateCore
import NIOCore
import NIOHTTP1

/// How each response on an HTTP/1.x connection is framed, decided once at its head, and the
/// head's bytes: the state ``HTTP1ResponseEncoder`` keeps, as a value tested without a channel.
///
/// The framing is NIO's `HTTPResponseEncoder`'s (RFC 9112 §6): a status that has no body (1xx,
/// 204, 304) and an answer to `CONNECT` lose `Content-Length` and `Transfer-Encoding`; an answer
/// with `Content-Length` loses `Transfer-Encoding`; any other HTTP/1.1 answer is chunked. An answer
/// to `HEAD` keeps the framing fields an equivalent `GET` would have, and carries no body. Requests
/// are answered in the order they came, so each final (non-1xx, or 101) head takes the oldest
/// request method still waiting (``requestArrived(_:)``).
///
/// Unlike NIO's encoder, a head is written only when every field is well formed: a name of token
/// characters (RFC 9110 §5.6.2), a value and a reason of HTAB, SP, visible ASCII and obs-text (no
/// CR, LF, NUL or other control byte), and a body only where the status and the request allow one
/// (none for 1xx, 204, 304, `HEAD`, `CONNECT`). Nothing the gateway relays or makes can then
/// split a response in two, whatever reaches a field or a body.
struct HTTP1ResponseFraming {
    /// How the current response's body is written.
    enum Body: Equatable {
        /// Bytes as they are, up to the end (`Content-Length`, or HTTP/1.0 up to the close).
        case identity
        /// RFC 9112 §7.1 chunks.
        case chunked
        /// None may be written: an answer to `HEAD` or `CONNECT`, or a status without content
        /// (1xx, 204, 304).
        case suppressed
    }

    /// A head that cannot be written as it is.
    struct MalformedField: Error, CustomStringConvertible {
        var description: String {
            "response head malformed (a field name that is not a token, or a control byte other than HTAB in a value or the reason)"
        }
    }

    /// Methods of the requests not yet answered, oldest first.
    private var methods = CircularBuffer<HTTPMethod>(initialCapacity: 2)
    /// The current response's body framing, set by its head.
    private(set) var body = Body.identity

    /// A request head arrived; its answer comes after those of the requests before it.
    mutating func requestArrived(_ method: HTTPMethod) {
        methods.append(method)
    }

    /// Fields a head gets beyond its own (the gateway's answers: ``HTTP1ResponseEncoder/writeAnswer(_:body:version:date:connection:)``).
    struct AddedFields {
        /// A `Date` field, added when the head has none.
        var date: String?
        /// A `Connection` field, in place of any the head has.
        var connection: StaticString?
    }

    /// Decides the framing of `head` and writes it, framing fields corrected, to `buffer`, with
    /// room reserved for `bodyRoom` more bytes after it. Throws ``MalformedField`` (and leaves
    /// `buffer` and the framing as they were) when a field could split the response.
    mutating func writeHead(_ head: HTTPResponseHead, into buffer: inout ByteBuffer, bodyRoom: Int = 0) throws {
        try writeHead(
            code: Int(clamping: head.status.code), reason: head.status.reasonPhrase, version: head.version, fields: head.headers,
            name: \.name, value: \.value, into: &buffer, bodyRoom: bodyRoom)
    }

    /// Decides the framing of a head of status `code`, with `fields` (each element's `name` and
    /// `value`) and `added`, and writes it as ``writeHead(_:into:bodyRoom:)`` does.
    mutating func writeHead<Fields: Sequence>(
        code: Int, reason: String, version: HTTPVersion, fields: Fields, name: (Fields.Element) -> String,
        value: (Fields.Element) -> String, added: AddedFields = AddedFields(), into buffer: inout ByteBuffer, bodyRoom: Int
    ) throws {
        let informational = (100..<200).contains(code) && code != 101
        // Matched, not compared: `HTTPMethod`'s `==` compares the methods' names as strings.
        var connect = false
        var suppressed = false
        if !informational, let method = methods.first {
            switch method {
            case .CONNECT: (connect, suppressed) = (true, true)
            case .HEAD: suppressed = true
            default: break
            }
        }
        // One scan: the framing fields present, and the bytes the fields take.
        var hasLength = false
        var hasDate = false
        var fieldBytes = 0
        for field in fields {
            let fieldName = name(field)
            fieldBytes += fieldName.utf8.count + value(field).utf8.count + 4
            switch fieldName.utf8.count {
            case 14 where !hasLength: hasLength = Self.isField(fieldName, "content-length")
            case 4 where added.date != nil && !hasDate: hasDate = Self.isField(fieldName, "date")
            default: break
            }
        }
        // NIO's rules: no body, no framing fields; Content-Length wins over Transfer-Encoding;
        // otherwise HTTP/1.1 is chunked (the field replaced by one `transfer-encoding: chunked`
        // at the end); HTTP/1.0 is read to the close.
        let bodiless = connect || (100..<200).contains(code) || code == 204 || code == 304
        let chunked = !bodiless && !hasLength && version.major == 1 && version.minor >= 1
        let dropsLength = bodiless
        // An HTTP/1.0 answer never carries Transfer-Encoding (RFC 9112 §6.1): its body is read to
        // the close, and a reader that believed the field would read it as chunks.
        let dropsCoding = bodiless || hasLength || chunked || !(version.major == 1 && version.minor >= 1)
        let replacesConnection = added.connection != nil
        let start = buffer.writerIndex
        buffer.reserveCapacity(minimumWritableBytes: 32 + reason.utf8.count + fieldBytes + 96 + bodyRoom)
        var valid = buffer.writeStatusLine(version: version, code: code, reason: reason)
        for field in fields {
            valid =
                Self.withBytes(of: name(field)) { nameBytes in
                    switch nameBytes.count {
                    case 14 where dropsLength && Self.matches(nameBytes, "content-length"): return true
                    case 17 where dropsCoding && Self.matches(nameBytes, "transfer-encoding"): return true
                    case 10 where replacesConnection && Self.matches(nameBytes, "connection"): return true
                    default: return Self.withBytes(of: value(field)) { buffer.writeField(nameBytes, $0) }
                    }
                } && valid
        }
        if let date = added.date, !hasDate {
            valid = Self.withBytes(of: date) { buffer.writeField(Self.bytes("Date"), $0) } && valid
        }
        if let connection = added.connection {
            connection.withUTF8Buffer { _ = buffer.writeField(Self.bytes("Connection"), $0) }
        }
        if chunked { buffer.writeStaticString("transfer-encoding: chunked\r\n") }
        buffer.writeStaticString("\r\n")
        guard valid else {
            buffer.moveWriterIndex(to: start)
            throw MalformedField()
        }
        if !informational, !methods.isEmpty { methods.removeFirst() }
        // A status without content (1xx, 204, 304; RFC 9110 §15) carries no body either: bytes
        // after its head would be read as the next response.
        body = suppressed || bodiless ? .suppressed : chunked ? .chunked : .identity
    }

    /// `fields` and the blank line after them (a chunked body's trailers); nothing is written
    /// when one is malformed.
    static func writeFields(_ fields: HTTPHeaders, into buffer: inout ByteBuffer) throws {
        let start = buffer.writerIndex
        var valid = true
        for (name, value) in fields {
            valid = withBytes(of: name) { nameBytes in withBytes(of: value) { buffer.writeField(nameBytes, $0) } } && valid
        }
        buffer.writeStaticString("\r\n")
        guard valid else {
            buffer.moveWriterIndex(to: start)
            throw MalformedField()
        }
    }

    /// `name` is `lowercased` (lower case ASCII), whatever its case.
    private static func isField(_ name: String, _ lowercased: StaticString) -> Bool {
        withBytes(of: name) { matches($0, lowercased) }
    }

    /// `bytes` are `lowercased`'s, compared without regard to ASCII case.
    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercased: StaticString) -> Bool {
        lowercased.withUTF8Buffer { ASCIICase.equals(bytes, lower: $0) }
    }

    /// A static string's bytes.
    private static func bytes(_ text: StaticString) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// The response ended: the next head decides its own framing.
    mutating func responseEnded() {
        body = .identity
    }
}

extension ByteBuffer {
    /// `HTTP/x.y code reason` and CRLF, in one write; false when the reason holds a control byte
    /// other than HTAB.
    fileprivate mutating func writeStatusLine(version: HTTPVersion, code: Int, reason: String) -> Bool {
        var digits: (UInt8, UInt8, UInt8) = (0, 0, 0)
        let threeDigits = (100...999).contains(code)
        if threeDigits {
            digits = (UInt8(truncatingIfNeeded: code / 100), UInt8(truncatingIfNeeded: code / 10 % 10), UInt8(truncatingIfNeeded: code % 10))
        }
        let plainVersion = (0...9).contains(version.major) && (0...9).contains(version.minor)
        guard threeDigits, plainVersion else {
            // Not on the gateway's paths (its statuses have three digits, its versions are 1.x).
            writeString("HTTP/\(version.major).\(version.minor) \(code) ")
            let valid = HTTP1ResponseFraming.withBytes(of: reason) { bytes in
                writeBytes(bytes)
                return HTTP1ResponseFraming.isFieldValue(bytes)
            }
            writeStaticString("\r\n")
            return valid
        }
        return HTTP1ResponseFraming.withBytes(of: reason) { reasonBytes in
            writeWithUnsafeMutableBytes(minimumWritableBytes: 15 + reasonBytes.count) { out in
                let zero = UInt8(ascii: "0")
                let line: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (
                    UInt8(ascii: "H"), UInt8(ascii: "T"), UInt8(ascii: "T"), UInt8(ascii: "P"), UInt8(ascii: "/"),
                    zero &+ UInt8(truncatingIfNeeded: version.major), UInt8(ascii: "."), zero &+ UInt8(truncatingIfNeeded: version.minor),
                    UInt8(ascii: " "), zero &+ digits.0, zero &+ digits.1, zero &+ digits.2, UInt8(ascii: " ")
                )
                withUnsafeBytes(of: line) { out.copyMemory(from: $0) }
                UnsafeMutableRawBufferPointer(rebasing: out[13...]).copyMemory(from: UnsafeRawBufferPointer(reasonBytes))
                out[13 + reasonBytes.count] = UInt8(ascii: "\r")
                out[14 + reasonBytes.count] = UInt8(ascii: "\n")
                return 15 + reasonBytes.count
            }
            return HTTP1ResponseFraming.isFieldValue(reasonBytes)
        }
    }

    /// `name: value` and CRLF, in one write; false when the name is not a token (RFC 9110
    /// §5.6.2) or the value holds a control byte other than HTAB.
    fileprivate mutating func writeField(_ nameBytes: UnsafeBufferPointer<UInt8>, _ valueBytes: UnsafeBufferPointer<UInt8>) -> Bool {
        writeWithUnsafeMutableBytes(minimumWritableBytes: nameBytes.count + valueBytes.count + 4) { out in
            out.copyMemory(from: UnsafeRawBufferPointer(nameBytes))
            var at = nameBytes.count
            out[at] = UInt8(ascii: ":")
            out[at + 1] = UInt8(ascii: " ")
            at += 2
            UnsafeMutableRawBufferPointer(rebasing: out[at...]).copyMemory(from: UnsafeRawBufferPointer(valueBytes))
            at += valueBytes.count
            out[at] = UInt8(ascii: "\r")
            out[at + 1] = UInt8(ascii: "\n")
            return at + 2
        }
        return HTTPToken.isToken(nameBytes) && HTTP1ResponseFraming.isFieldValue(valueBytes)
    }
}

extension HTTP1ResponseFraming {
    /// Calls `body` with `text`'s UTF-8, without a copy for a native string.
    fileprivate static func withBytes<Result>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var text = text
        return text.withUTF8(body)
    }

    /// A field value or reason phrase of RFC 9110 §5.5 and RFC 9112 §4 bytes only: HTAB, SP,
    /// visible ASCII and obs-text; no CR, LF, NUL or other control byte, which could end the line
    /// early for one reader and not for another.
    fileprivate static func isFieldValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes where byte < 0x20 ? byte != 0x09 : byte == 0x7F { return false }
        return true
    }
}
