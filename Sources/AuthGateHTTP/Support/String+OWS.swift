extension Substring {
    /// The text without leading and trailing optional whitespace (spaces and tabs, RFC 9110 OWS),
    /// as list elements of header values are read. Works on UTF-8 bytes: it runs on every proxied
    /// request, and walking `Character`s (grapheme breaking) made it a hot spot.
    var trimmingOWS: String {
        let bytes = utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(self[first...last])
    }
}

extension String {
    /// The text without leading and trailing spaces and tabs (see `Substring.trimmingOWS`).
    var trimmingOWS: String { self[...].trimmingOWS }
}
