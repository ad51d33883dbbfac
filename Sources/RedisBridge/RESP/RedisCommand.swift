public import NIOCore

/// One argument of a Redis command: text, raw bytes or an integer, all sent as bulk strings.
public enum RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case bytes(ByteBuffer)
    /// Raw bytes as an array (an encoded record): written as they are, with no buffer made for them.
    case byteArray([UInt8])
    case integer(Int64)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }

    /// Bytes this argument adds to an encoded command, counting its bulk-string header.
    var encodedLengthEstimate: Int {
        switch self {
        case .string(let text): return text.utf8.count + 16
        case .bytes(let buffer): return buffer.readableBytes + 16
        case .byteArray(let bytes): return bytes.count + 16
        case .integer: return 36
        }
    }
}

/// A Redis command in its argument form, encoded in Swift as a RESP array of bulk strings.
///
/// ```swift
/// let command = RedisCommand("SET", "session:1", "alive", "PX", 5000)
/// ```
public struct RedisCommand: Sendable, Hashable {
    /// Every argument, the command name first.
    public let arguments: [RedisArgument]

    /// Creates a command from its name and arguments.
    public init(_ name: String, _ arguments: RedisArgument...) {
        self.arguments = [.string(name)] + arguments
    }

    /// Creates a command from its name and an array of arguments.
    public init(_ name: String, arguments: [RedisArgument]) {
        self.arguments = [.string(name)] + arguments
    }

    /// Creates a command from all of its arguments, the command name first (no copy).
    init(nameAndArguments: [RedisArgument]) {
        self.arguments = nameAndArguments
    }

    /// The command name as given (`GET`, `EVALSHA`, ...).
    public var name: String {
        if case .string(let name) = arguments.first { return name }
        return ""
    }

    /// Appends the RESP encoding of this command to `buffer`.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeStaticString("*")
        Self.withDecimal(Int64(arguments.count)) { buffer.writeBytes($0) }
        buffer.writeStaticString("\r\n")
        for argument in arguments {
            switch argument {
            case .string(let text):
                Self.writeBulkHeader(length: text.utf8.count, into: &buffer)
                buffer.writeString(text)
            case .bytes(let bytes):
                Self.writeBulkHeader(length: bytes.readableBytes, into: &buffer)
                buffer.writeImmutableBuffer(bytes)
            case .byteArray(let bytes):
                Self.writeBulkHeader(length: bytes.count, into: &buffer)
                buffer.writeBytes(bytes)
            case .integer(let value):
                Self.withDecimal(value) { digits in
                    Self.writeBulkHeader(length: digits.count, into: &buffer)
                    buffer.writeBytes(digits)
                }
            }
            buffer.writeStaticString("\r\n")
        }
    }

    /// The RESP encoding in a new buffer.
    public func encoded(allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: arguments.reduce(16) { $0 + $1.encodedLengthEstimate })
        encode(into: &buffer)
        return buffer
    }

    private static func writeBulkHeader(length: Int, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("$")
        withDecimal(Int64(length)) { buffer.writeBytes($0) }
        buffer.writeStaticString("\r\n")
    }

    /// Calls `body` with `value` in decimal, its sign included (no `String` in between; every
    /// command writes several numbers).
    private static func withDecimal(_ value: Int64, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var magnitude = value.magnitude
        // 20 digits hold UInt64.max, so Int64.min's magnitude too; one more for the sign.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            body(UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
