public import NIOCore

/// One entry of a Redis stream: its id and its field/value pairs in the order they were added.
public struct RedisStreamEntry: Sendable, Hashable {
    /// The entry id, `<milliseconds>-<sequence>`.
    public let id: String
    /// Field/value pairs as stored.
    public let fields: [Field]

    /// One field of an entry.
    public struct Field: Sendable, Hashable {
        public let name: String
        public let value: ByteBuffer
    }

    /// Creates an entry.
    public init(id: String, fields: [Field]) {
        self.id = id
        self.fields = fields
    }

    /// The value of the first field with this name, as text.
    public subscript(_ name: String) -> String? {
        fields.first { $0.name == name }.map { String(buffer: $0.value) }
    }

    /// Milliseconds since the epoch at which Redis added the entry (the first part of its id).
    public var timestampMilliseconds: Int64? {
        id.split(separator: "-").first.flatMap { DecimalInteger.parse($0, in: 0...Int64.max) }
    }

    /// Parses the entries of one stream from an `XREAD` / `XRANGE` reply (`[[id, [f, v, ...]], ...]`).
    public static func entries(from reply: RESPValue) throws -> [RedisStreamEntry] {
        guard let items = reply.array else {
            if reply.isNull { return [] }
            throw RedisError(.unexpectedReply, "expected an array of stream entries, got \(reply)")
        }
        return try items.map { item in
            guard let pair = item.array, pair.count == 2, let id = pair[0].string, let flat = pair[1].array, flat.count % 2 == 0 else {
                throw RedisError(.unexpectedReply, "malformed stream entry \(item)")
            }
            var fields: [Field] = []
            fields.reserveCapacity(flat.count / 2)
            var index = 0
            while index < flat.count {
                guard let name = flat[index].string, case .bulkString(let value) = flat[index + 1] else {
                    throw RedisError(.unexpectedReply, "malformed field in stream entry \(id)")
                }
                fields.append(Field(name: name, value: value))
                index += 2
            }
            return RedisStreamEntry(id: id, fields: fields)
        }
    }
}
