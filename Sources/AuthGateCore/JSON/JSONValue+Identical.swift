/// Byte-for-byte sameness of JSON values: what decides whether a record must take a new value or
/// may keep the one it has (and with it the dictionary storage that ``JSONObjectTextMemo``,
/// `ClaimsMetadataCache` and the record caches recognise).
extension JSONValue {
    /// Whether `self` and `other` write the same JSON text: the same cases, numbers with the same
    /// bits, and strings and object member names with the same UTF-8 bytes (``ByteExactString``,
    /// one `memcmp`). Swift's `==` is not that: it calls canonically equivalent strings equal
    /// (`"é"` and `"e\u{301}"`), and `0.0` equal to `-0.0`.
    package func isIdentical(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): return ByteExactString(a) == ByteExactString(b)
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.object(let a), .object(let b)): return Self.identicalObjects(a, b)
        default: return false
        }
    }

    /// Whether two objects write the same JSON text (``isIdentical(to:)``); at once when they
    /// share storage.
    package static func identicalObjects(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> Bool {
        if JSONObjectTextMemo.sharesStorage(a, b) { return true }
        guard a.count == b.count else { return false }
        return a.allSatisfy { name, value in b.identicalMember(name, value) }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// Whether this object has a member spelled `name`, byte for byte, whose value is identical to
    /// `value` (``JSONValue/isIdentical(to:)``).
    package func identicalMember(_ name: String, _ value: JSONValue) -> Bool {
        guard let index = index(forKey: name) else { return false }
        return ByteExactString(self[index].key) == ByteExactString(name) && self[index].value.isIdentical(to: value)
    }
}
