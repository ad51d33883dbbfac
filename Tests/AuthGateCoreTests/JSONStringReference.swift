/// JSON's escapes for a string, one scalar at a time and as plainly as they can be written: the
/// reference that the byte-level writers (``JSONValue`` and the log handler) are tested against.
enum JSONStringReference {
    /// `text` quoted: `"` and `\` escaped, `\n`, `\r` and `\t` by name, the other control
    /// characters as `\u00XX` (lower-case hex), everything else as it is.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += "\\u00" + String(scalar.value >> 4, radix: 16) + String(scalar.value & 15, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
