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

    /// Appends the RESP encoding of this command to `buffer`: its exact length is counted first,
    /// then every byte is stored through one pointer (a `ByteBuffer` write per piece checked the
    /// buffer's uniqueness and capacity about thirty times for a script call).
    public func encode(into buffer: inout ByteBuffer) {
        var length = 3 + Self.decimalCount(Int64(arguments.count))
        for argument in arguments {
            let payload: Int
            switch argument {
            case .string(let text): payload = text.utf8.count
            case .bytes(let bytes): payload = bytes.readableBytes
            case .byteArray(let bytes): payload = bytes.count
            case .integer(let value): payload = Self.decimalCount(value)
            }
            length += 5 + Self.decimalCount(Int64(payload)) + payload
        }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { raw in
            var output = RESPOutput(base: raw.bindMemory(to: UInt8.self))
            output.header(UInt8(ascii: "*"), Int64(arguments.count))
            for argument in arguments {
                switch argument {
                case .string(let text):
                    var text = text
                    text.withUTF8 { output.bulk($0) }
                case .bytes(let bytes):
                    bytes.withUnsafeReadableBytes { output.bulk($0.assumingMemoryBound(to: UInt8.self)) }
                case .byteArray(let bytes):
                    bytes.withUnsafeBufferPointer { output.bulk($0) }
                case .integer(let value):
                    Self.withDecimal(value) { output.bulk($0) }
                }
            }
            precondition(output.count == length, "RESP length counted wrong")
            return length
        }
    }

    /// The RESP encoding in a new buffer.
    public func encoded(allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: arguments.reduce(16) { $0 + $1.encodedLengthEstimate })
        encode(into: &buffer)
        return buffer
    }

    /// Digits of `value` in decimal, its sign included.
    static func decimalCount(_ value: Int64) -> Int {
        var magnitude = value.magnitude
        var count = value < 0 ? 2 : 1
        while magnitude >= 10 {
            magnitude /= 10
            count += 1
        }
        return count
    }

    /// Stores RESP pieces one after another into memory already counted for them.
    private struct RESPOutput {
        let base: UnsafeMutableBufferPointer<UInt8>
        var count = 0

        init(base: UnsafeMutableBufferPointer<UInt8>) {
            self.base = base
        }

        mutating func byte(_ value: UInt8) {
            precondition(count < base.count, "RESP length counted wrong")
            base[count] = value
            count += 1
        }

        mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
            guard let from = source.baseAddress, let to = base.baseAddress, source.count > 0 else { return }
            precondition(source.count <= base.count - count, "RESP length counted wrong")
            (to + count).update(from: from, count: source.count)
            count += source.count
        }

        /// `*N\r\n` or `$N\r\n`.
        mutating func header(_ marker: UInt8, _ value: Int64) {
            byte(marker)
            RedisCommand.withDecimal(value) { bytes($0) }
            byte(UInt8(ascii: "\r"))
            byte(UInt8(ascii: "\n"))
        }

        /// One bulk string: its header, its bytes, `\r\n`.
        mutating func bulk(_ payload: UnsafeBufferPointer<UInt8>) {
            header(UInt8(ascii: "$"), Int64(payload.count))
            bytes(payload)
            byte(UInt8(ascii: "\r"))
            byte(UInt8(ascii: "\n"))
        }
    }

    /// Calls `body` with `value` in decimal, its sign included (no `String` in between; every
    /// command writes several numbers).
    fileprivate static func withDecimal(_ value: Int64, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
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
