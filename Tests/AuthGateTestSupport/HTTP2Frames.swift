import Dispatch
import Glibc

/// HTTP/2 frames written byte by byte (RFC 9113), for tests that must send what no well-behaved
/// client library would: floods of resets, endless CONTINUATION frames, SETTINGS storms. Request
/// headers use HPACK's static table and literals only (no Huffman coding, no dynamic table).
public enum HTTP2Frames {
    /// The client connection preface.
    public static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public enum FrameType: UInt8, Sendable {
        case data = 0, headers = 1, rstStream = 3, settings = 4, ping = 6, goAway = 7, windowUpdate = 8, continuation = 9
    }

    /// One frame: 24-bit length, type, flags, 31-bit stream id, payload.
    public static func frame(_ type: FrameType, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type.rawValue, flags]
            + bigEndian(stream & 0x7FFF_FFFF) + payload
    }

    /// An empty SETTINGS frame (the client's half of the preface).
    public static var settings: [UInt8] { frame(.settings) }

    /// The header block of `GET <path>` to `authority` over http: `:method GET` and `:scheme http`
    /// from the static table, `:path` and `:authority` as literals with indexed names.
    public static func getHeaderBlock(path: String, authority: String = "localhost") -> [UInt8] {
        requestHeaderBlock(method: 0x82, path: path, authority: authority)
    }

    /// The header block of a request: `method` is the static-table byte (`0x82` GET, `0x83` POST);
    /// without `:authority` when `authority` is nil.
    public static func requestHeaderBlock(method: UInt8, path: String, authority: String? = "localhost") -> [UInt8] {
        [method, 0x86] + literal(nameIndex: 4, value: path) + (authority.map { literal(nameIndex: 1, value: $0) } ?? [])
    }

    /// The header block of RFC 8441's extended CONNECT for `path` over http (`:protocol`, which
    /// HPACK's static table lacks, as a literal), then `fields` (lower-case names).
    public static func extendedConnectHeaderBlock(
        path: String, protocol: String = "websocket", authority: String = "localhost", fields: [(String, String)] = [("sec-websocket-version", "13")]
    ) -> [UInt8] {
        var block: [UInt8] = literal(nameIndex: 2, value: "CONNECT")
        block += [0x86]
        block += literal(nameIndex: 4, value: path)
        block += literal(nameIndex: 1, value: authority)
        block += literal(name: ":protocol", value: `protocol`)
        for (name, value) in fields { block += literal(name: name, value: value) }
        return block
    }

    /// The settings in a SETTINGS frame's payload: identifier and value.
    public static func settings(in payload: [UInt8]) -> [(UInt16, UInt32)] {
        stride(from: 0, to: payload.count - payload.count % 6, by: 6).map { offset -> (UInt16, UInt32) in
            let identifier = UInt16(payload[offset]) << 8 | UInt16(payload[offset + 1])
            let value = payload[offset + 2..<offset + 6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return (identifier, value)
        }
    }

    /// A WebSocket frame as a client sends it (RFC 6455 §5.2: FIN set, masked), with a payload
    /// under 126 bytes.
    public static func maskedWebSocketFrame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        var frame: [UInt8] = [0x80 | opcode, 0x80 | UInt8(payload.count)]
        frame += mask
        for (offset, byte) in payload.enumerated() { frame.append(byte ^ mask[offset % 4]) }
        return frame
    }

    /// A complete bodiless request on `stream`.
    public static func get(stream: UInt32, path: String) -> [UInt8] {
        frame(.headers, flags: 0x1 | 0x4, stream: stream, payload: getHeaderBlock(path: path))
    }

    /// RST_STREAM with CANCEL (0x8).
    public static func reset(stream: UInt32) -> [UInt8] {
        frame(.rstStream, stream: stream, payload: bigEndian(8))
    }

    /// A frame read back: its type, flags, stream and payload.
    public struct Frame: Sendable {
        public let type: UInt8
        public let flags: UInt8
        public let stream: UInt32
        public let payload: [UInt8]

        /// For GOAWAY, its error code (`0xb`: ENHANCE_YOUR_CALM, `0x1`: PROTOCOL_ERROR).
        public var goAwayErrorCode: UInt32? {
            guard type == FrameType.goAway.rawValue, payload.count >= 8 else { return nil }
            return payload[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
        }
    }

    /// The frames in `bytes` (what a server sent), up to the first incomplete one.
    public static func parse(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var offset = 0
        while bytes.count - offset >= 9 {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            guard bytes.count - offset - 9 >= length else { break }
            let stream = bytes[offset + 5..<offset + 9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
            frames.append(
                Frame(type: bytes[offset + 3], flags: bytes[offset + 4], stream: stream, payload: Array(bytes[offset + 9..<offset + 9 + length])))
            offset += 9 + length
        }
        return frames
    }

    /// Sends `bytes` on a new connection to `port` while reading what comes back, on threads of
    /// their own, until the server closes the connection or stays silent for 10 s. Sending stops
    /// early when the server has closed. `closed` is true for a close and for a reset (a server
    /// that closes with the flood still unread in its socket resets the connection), false when
    /// the server was silent for 10 s with the connection open.
    public static func exchange(port: Int, sending bytes: [UInt8]) async throws -> (frames: [Frame], closed: Bool) {
        let connection = try RawConnection(port: port, receiveBuffer: 1 << 20)
        let sender = Task.detached { await offload { connection.send(bytes: bytes) } }
        let received = await connection.receiveUntilClosed()
        await sender.value
        return (parse(received.bytes), received.closed || connection.receiveError == ECONNRESET)
    }

    /// Sends `bytes` on a new connection to `port` and reads frames until `done` says it has
    /// what it waits for (true), or the connection ends or stays silent for 10 s (false).
    public static func exchange(port: Int, sending bytes: [UInt8], until done: @escaping @Sendable ([Frame]) -> Bool) async throws -> (
        frames: [Frame], done: Bool
    ) {
        let connection = try RawConnection(port: port, receiveBuffer: 1 << 20)
        let sender = Task.detached { await offload { connection.send(bytes: bytes) } }
        var received: [UInt8] = []
        while true {
            let chunk = await connection.receive()
            if chunk.isEmpty { break }
            received += chunk
            if done(parse(received)) { break }
        }
        await sender.value
        let frames = parse(received)
        return (frames, done(frames))
    }

    /// Sends `GET <path>` on `stream` of an open connection (its preface already sent) and reads
    /// into `received` (everything the connection has sent so far, frames cut across reads
    /// included) until the answer has ended the stream; throws when the connection ends first.
    public static func request(stream: UInt32, path: String, on connection: RawConnection, received: inout [UInt8]) async throws {
        await connection.send(bytes: get(stream: stream, path: path))
        while !parse(received).contains(where: { $0.stream == stream && $0.flags & 0x1 != 0 }) {
            let chunk = await connection.receive()
            guard !chunk.isEmpty else { throw TestSupportError("stream \(stream) was not answered") }
            received += chunk
        }
    }

    private static func offload(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                work()
                continuation.resume()
            }
        }
    }

    /// A literal header field without indexing, with an indexed name (RFC 7541, 6.2.2).
    private static func literal(nameIndex: Int, value: String) -> [UInt8] {
        integer(nameIndex, prefixBits: 4, flags: 0) + integer(value.utf8.count, prefixBits: 7, flags: 0) + Array(value.utf8)
    }

    /// A literal header field without indexing, with a literal name.
    public static func literal(name: String, value: String) -> [UInt8] {
        [0x00] + integer(name.utf8.count, prefixBits: 7, flags: 0) + Array(name.utf8) + integer(value.utf8.count, prefixBits: 7, flags: 0)
            + Array(value.utf8)
    }

    /// An HPACK integer with an N-bit prefix (RFC 7541, 5.1).
    private static func integer(_ value: Int, prefixBits: Int, flags: UInt8) -> [UInt8] {
        let limit = (1 << prefixBits) - 1
        if value < limit { return [flags | UInt8(value)] }
        var bytes = [flags | UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        bytes.append(UInt8(rest))
        return bytes
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
