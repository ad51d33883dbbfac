/// Writes one JSON object member by member, for shapes known in advance (stored records, access
/// token claims, GoTrue's answers): no dictionary is built and nothing is sorted per write. The
/// caller writes members in the order it wants them; to give the bytes ``JSONValue`` would, that is
/// sorted name order, which each caller's tests hold equal.
package struct JSONObjectWriter {
    package private(set) var output: [UInt8]

    package init(capacity: Int = 384) {
        output = []
        output.reserveCapacity(capacity)
        output.append(UInt8(ascii: "{"))
    }

    /// A member's name; its value follows.
    package mutating func name(_ name: StaticString) {
        if output.count > 1 { output.append(UInt8(ascii: ",")) }
        output.append(UInt8(ascii: "\""))
        output.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        output.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// A string member; nothing when `value` is nil.
    package mutating func string(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        name(key)
        JSONValue.writeString(value, into: &output)
    }

    package mutating func integer(_ key: StaticString, _ value: Int64) {
        name(key)
        JSONValue.integer(value).write(into: &output)
    }

    package mutating func bool(_ key: StaticString, _ value: Bool) {
        name(key)
        output.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Any value, written as ``JSONValue`` writes it.
    package mutating func value(_ key: StaticString, _ value: JSONValue) {
        name(key)
        value.write(into: &output)
    }

    /// A member whose value is JSON written by `body` (a nested object or array).
    package mutating func nested(_ key: StaticString, _ body: (inout [UInt8]) -> Void) {
        name(key)
        body(&output)
    }

    /// The object's text, closed.
    package mutating func finished() -> [UInt8] {
        output.append(UInt8(ascii: "}"))
        return output
    }
}
