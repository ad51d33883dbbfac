/// Reads a fuzzer's bytes as the pieces a target needs: a few control bytes, then the rest, or
/// fields separated by a NUL.
public struct FuzzInput {
    private var bytes: ArraySlice<UInt8>

    public init(_ start: UnsafeRawPointer?, _ count: Int) {
        if let start, count > 0 {
            bytes = ArraySlice(UnsafeRawBufferPointer(start: start, count: count))
        } else {
            bytes = []
        }
    }

    /// Whether every byte has been read.
    public var isEmpty: Bool { bytes.isEmpty }

    /// The next byte, or 0 when the input is used up.
    public mutating func byte() -> UInt8 {
        bytes.popFirst() ?? 0
    }

    /// The bytes up to the next NUL (which is consumed), or all that remain.
    public mutating func field() -> [UInt8] {
        if let end = bytes.firstIndex(of: 0) {
            let field = Array(bytes[..<end])
            bytes = bytes[(end + 1)...]
            return field
        }
        defer { bytes = [] }
        return Array(bytes)
    }

    /// Every byte not yet read.
    public mutating func rest() -> [UInt8] {
        defer { bytes = [] }
        return Array(bytes)
    }

    /// The next field as text (invalid UTF-8 repaired, as a server's decoding would).
    public mutating func text() -> String {
        String(decoding: field(), as: UTF8.self)
    }
}
