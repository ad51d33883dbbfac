/// The `Host` of a request in the one form routes are matched on: lower case, without the port
/// and without a trailing dot (`API.Example.com.:443` is `api.example.com`).
public enum HostName {
    /// The canonical host of a `Host` value or an absolute-form authority, or nil when it is not a
    /// valid `host[:port]` (RFC 9110 §7.2: reg-name, IPv4 or a bracketed IPv6 literal).
    public static func canonical(_ value: some StringProtocol) -> String? {
        // The common case, already canonical: lower-case letters, digits, "-" and "." only, not
        // ending with ".".
        if !value.isEmpty, value.utf8.count <= 255, !value.hasSuffix("."),
            value.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 46 })
        {
            return hasEmptyLabel(value.utf8[...]) ? nil : String(value)
        }
        let bytes = Array(value.utf8)
        guard isValidAuthority(bytes[...]) else { return nil }
        var host: ArraySlice<UInt8>
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = bytes[...close]
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            host = bytes[..<colon]
        } else {
            host = bytes[...]
        }
        if host.first != UInt8(ascii: "[") {
            // One trailing dot is the root label (`example.com.` is `example.com`); any other
            // empty label (`.`, `..`, `.a`, `a..b`, `a..`) is no name at all: refused, so that
            // every host has exactly one spelling.
            if host.last == UInt8(ascii: ".") { host = host.dropLast() }
            guard !hasEmptyLabel(host) else { return nil }
        }
        return String(decoding: host.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// `host[:port]` with a reg-name of letters, digits, `-._~` and sub-delimiters other than
    /// `,`, or a bracketed IPv6 literal; the port is 1 to 5 digits. Nothing else (no `@`, `/`,
    /// spaces or controls).
    public static func isValidAuthority(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 255 + 6 else { return false }
        var rest = bytes
        if rest.first == UInt8(ascii: "[") {
            guard let close = rest.firstIndex(of: UInt8(ascii: "]")), close > rest.startIndex + 1 else { return false }
            let literal = rest[(rest.startIndex + 1)..<close]
            guard literal.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return false }
            rest = rest[(close + 1)...]
        } else {
            let end = rest.firstIndex(of: UInt8(ascii: ":")) ?? rest.endIndex
            let name = rest[..<end]
            guard !name.isEmpty, name.allSatisfy(isRegNameByte) else { return false }
            rest = rest[end...]
        }
        if rest.isEmpty { return true }
        guard rest.first == UInt8(ascii: ":") else { return false }
        let port = rest.dropFirst()
        return !port.isEmpty && port.count <= 5 && port.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Whether a dot-separated name is empty or has an empty label.
    private static func hasEmptyLabel<Bytes: Collection<UInt8>>(_ name: Bytes) -> Bool {
        var previous = UInt8(ascii: ".")
        for byte in name {
            if byte == UInt8(ascii: "."), previous == UInt8(ascii: ".") { return true }
            previous = byte
        }
        return previous == UInt8(ascii: ".")
    }

    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        (RequestTarget.isUnreserved(byte) || RequestTarget.isSubDelimiter(byte)) && byte != UInt8(ascii: ",")
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
    }
}
