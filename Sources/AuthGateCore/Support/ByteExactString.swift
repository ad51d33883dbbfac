#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A string that equals another, and hashes, by its UTF-8 bytes. Swift's `==` on `String` is
/// Unicode canonical equivalence (U+212A KELVIN SIGN equals `K`, a precomposed `é` equals `e` plus
/// a combining accent), so two subjects or addresses that Redis keeps apart as different bytes
/// would be one key of a Swift dictionary. Keys that name accounts are compared as Redis compares
/// them: byte for byte.
package struct ByteExactString: Hashable, Sendable {
    package let value: String

    package init(_ value: String) {
        self.value = value
    }

    /// `memcmp` over the contiguous UTF-8 (the generic `elementsEqual` over the UTF-8 views cost
    /// more than the rest of a verified-token cache hit).
    package static func == (left: ByteExactString, right: ByteExactString) -> Bool {
        var left = left.value
        var right = right.value
        return left.withUTF8 { left in
            right.withUTF8 { right in
                guard left.count == right.count else { return false }
                guard let leftBase = left.baseAddress, let rightBase = right.baseAddress else { return true }
                return memcmp(leftBase, rightBase, left.count) == 0
            }
        }
    }

    package func hash(into hasher: inout Hasher) {
        var value = value
        value.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension Sequence<String> {
    /// Whether one of these strings is `value`, byte for byte (``ByteExactString``).
    package func containsBytes(of value: String) -> Bool {
        contains { ByteExactString($0) == ByteExactString(value) }
    }
}
