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

    package static func == (left: ByteExactString, right: ByteExactString) -> Bool {
        left.value.utf8.elementsEqual(right.value.utf8)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(value.utf8.count)
        for byte in value.utf8 { hasher.combine(byte) }
    }
}
