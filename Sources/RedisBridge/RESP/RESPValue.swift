public import NIOCore

/// A RESP2 reply, copied out of hiredis into Swift values.
///
/// hiredis 0.14 speaks RESP2 only, so there are no maps, sets, doubles or booleans. A null bulk
/// string and a null array both arrive as ``null``.
public enum RESPValue: Sendable, Hashable {
    /// A status reply such as `+OK`.
    case simpleString(String)
    /// An error reply such as `-ERR unknown command`; the text without the leading `-`.
    case error(String)
    /// An integer reply.
    case integer(Int64)
    /// A bulk string: arbitrary bytes.
    case bulkString(ByteBuffer)
    /// A null bulk string or null array.
    case null
    /// An array reply, possibly nested.
    case array([RESPValue])
}

extension RESPValue {
    /// The value as text: a status reply, or a bulk string decoded as UTF-8.
    public var string: String? {
        switch self {
        case .simpleString(let text): return text
        case .bulkString(let buffer): return String(buffer: buffer)
        default: return nil
        }
    }

    /// The value as an integer: an integer reply, or a bulk string holding a decimal integer.
    public var int: Int64? {
        switch self {
        case .integer(let value): return value
        case .bulkString(let buffer): return DecimalInteger.parse(buffer.readableBytesView, in: Int64.min...Int64.max)
        default: return nil
        }
    }

    /// The elements of an array reply.
    public var array: [RESPValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// True for a null reply.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension RESPValue: CustomStringConvertible {
    /// A short, readable rendering (`"OK"`, `(integer) 3`, `(nil)`, `[…]`), for tests and diagnostics.
    public var description: String {
        switch self {
        case .simpleString(let text): return text
        case .error(let text): return "(error) \(text)"
        case .integer(let value): return "(integer) \(value)"
        case .bulkString(let buffer): return "\"\(String(buffer: buffer))\""
        case .null: return "(nil)"
        case .array(let elements): return "[" + elements.map(\.description).joined(separator: ", ") + "]"
        }
    }
}

extension RESPValue {
    /// Redis's answer to `EVALSHA` for a script it does not have (a restart, a failover,
    /// `SCRIPT FLUSH`): the caller sends the script whole, which is a reload, not a failure.
    var isNoScript: Bool {
        if case .error(let message) = self { return message.hasPrefix("NOSCRIPT") }
        return false
    }
}
