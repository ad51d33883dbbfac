#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// Writes one JSON object member by member, for shapes known in advance (stored records, access
/// token claims, GoTrue's answers): no dictionary is built and nothing is sorted per write. The
/// caller writes members in the order it wants them; to give the bytes ``JSONValue`` would, that is
/// sorted name order, which each caller's tests hold equal.
package struct JSONObjectWriter {
    private var output: [UInt8]
    /// Where this object's members start in `output` (a nested object shares its parent's buffer).
    private var membersStart: Int

    package init(capacity: Int = 384) {
        output = []
        output.reserveCapacity(capacity)
        output.append(UInt8(ascii: "{"))
        membersStart = output.count
    }

    /// An object opened at the end of `output`, which it takes over until ``finished()``.
    private init(continuing output: consuming [UInt8]) {
        self.output = output
        self.output.append(UInt8(ascii: "{"))
        membersStart = self.output.count
    }

    /// A member's name; its value follows.
    package mutating func name(_ name: StaticString) {
        separateMember()
        output.append(UInt8(ascii: "\""))
        output.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        output.append(UInt8(ascii: "\""))
        output.append(UInt8(ascii: ":"))
    }

    /// A string member; nothing when `value` is nil.
    package mutating func string(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        name(key)
        JSONValue.writeString(value, into: &output)
    }

    /// A string member whose name is known only at run time (escaped as ``JSONValue`` escapes
    /// it); nothing when `value` is nil.
    package mutating func string(named name: String, _ value: String?) {
        guard let value else { return }
        separateMember()
        JSONValue.writeString(name, into: &output)
        output.append(UInt8(ascii: ":"))
        JSONValue.writeString(value, into: &output)
    }

    /// A date member in RFC 3339 with milliseconds (``Date/rfc3339WithMilliseconds``); nothing
    /// when `value` is nil. Its text needs no escaping, so its bytes are copied as they are.
    package mutating func rfc3339(_ key: StaticString, _ value: Date?) {
        guard let value else { return }
        name(key)
        output.append(UInt8(ascii: "\""))
        value.withRFC3339WithMilliseconds { output.append(contentsOf: $0) }
        output.append(UInt8(ascii: "\""))
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

    /// A metadata object member (`user_metadata`, `identity_data`), written through
    /// ``JSONObjectTextMemo``: the same bytes as ``value(_:_:)`` of `.object(members)`, copied
    /// when the same dictionary was written a moment before.
    package mutating func metadata(_ key: StaticString, _ members: [String: JSONValue]) {
        name(key)
        JSONObjectTextMemo.shared.write(members, into: &output)
    }

    /// A member whose value is JSON text already written (one value, as ``finished()`` gives it).
    package mutating func text(_ key: StaticString, _ json: [UInt8]) {
        name(key)
        output.append(contentsOf: json)
    }

    /// A member whose value is an object `body` writes, in this object's buffer.
    package mutating func object(_ key: StaticString, _ body: (inout JSONObjectWriter) -> Void) {
        name(key)
        output = Self.appendingObject(to: take(), body)
    }

    /// A member whose value is an array of objects, one written by `body` per element.
    package mutating func objects<Elements: Sequence>(
        _ key: StaticString, _ elements: Elements, _ body: (Elements.Element, inout JSONObjectWriter) -> Void
    ) {
        name(key)
        var array = take()
        array.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { array.append(UInt8(ascii: ",")) }
            array = Self.appendingObject(to: consume array) { body(element, &$0) }
        }
        array.append(UInt8(ascii: "]"))
        output = array
    }

    /// The object's text, closed.
    package mutating func finished() -> [UInt8] {
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// The comma before every member but the first.
    private mutating func separateMember() {
        if output.count > membersStart { output.append(UInt8(ascii: ",")) }
    }

    /// The buffer, moved out (so appending to it does not copy it).
    private mutating func take() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &output)
        return taken
    }

    private static func appendingObject(to output: consuming [UInt8], _ body: (inout JSONObjectWriter) -> Void) -> [UInt8] {
        var nested = JSONObjectWriter(continuing: output)
        body(&nested)
        return nested.finished()
    }
}
