extension StringProtocol {
    /// Whether the text is `lower` (lower-case ASCII) with ASCII letters compared without regard
    /// to case and every other byte compared exactly: how protocol tokens and host names are
    /// matched (RFC 9110 §5.1). Unicode's case mapping would not do: it lowers the Kelvin sign
    /// (U+212A) to `k`, so `websoc\u{212A}et` would be taken for `websocket` while the bytes say
    /// otherwise to every other reader.
    ///
    /// Compared as contiguous bytes (``ASCIICase/equals(_:lower:)``): several header names of
    /// every request go through here. Text without contiguous UTF-8 is compared byte by byte.
    func equalsLowercaseASCII(_ lower: String) -> Bool {
        let contiguous = utf8.withContiguousStorageIfAvailable { bytes in
            lower.utf8.withContiguousStorageIfAvailable { ASCIICase.equals(bytes, lower: $0) }
        }
        if let contiguous, let result = contiguous { return result }
        return utf8.elementsEqual(lower.utf8) { ASCIICase.lowered($0) == $1 }
    }

    /// The text with ASCII upper-case letters lowered and every other byte as it is.
    var lowercasedASCII: String {
        String(decoding: utf8.map(ASCIICase.lowered), as: UTF8.self)
    }
}
