extension StringProtocol {
    /// Whether the text is `lower` (lower-case ASCII) with ASCII letters compared without regard
    /// to case and every other byte compared exactly: how protocol tokens and host names are
    /// matched (RFC 9110 §5.1). Unicode's case mapping would not do: it lowers the Kelvin sign
    /// (U+212A) to `k`, so `websoc\u{212A}et` would be taken for `websocket` while the bytes say
    /// otherwise to every other reader.
    func equalsLowercaseASCII(_ lower: String) -> Bool {
        utf8.elementsEqual(lower.utf8) { ASCIICase.lowered($0) == $1 }
    }

    /// The text with ASCII upper-case letters lowered and every other byte as it is.
    var lowercasedASCII: String {
        String(decoding: utf8.map(ASCIICase.lowered), as: UTF8.self)
    }
}
