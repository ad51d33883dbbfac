/// The `Host` of a request in the one form routes are matched on: lower case, without the port
/// and without a trailing dot (`API.Example.com.:443` is `api.example.com`).
public enum HostName {
    /// The canonical host of a `Host` value or an absolute-form authority, or nil when it is not a
    /// valid `host[:port]` (RFC 9110 §7.2: reg-name, IPv4 or a bracketed IPv6 literal).
    ///
    /// Every request's host goes through here, so it reads the value's bytes in place: no copy
    /// unless upper-case letters must be lowered (a host of up to 15 bytes, `127.0.0.1`, is made
    /// without allocating at all).
    public static func canonical(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { canonical(bytes: $0) }
    }

    /// ``canonical(_:)`` of a value's UTF-8 bytes.
    static func canonical(bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard isValidAuthority(bytes) else { return nil }
        // The host ends at the port's colon, or after the `]` of an IPv6 literal.
        var end = bytes.count
        if bytes[0] == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            end = close + 1
        } else {
            if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) { end = colon }
            // One trailing dot is the root label (`example.com.` is `example.com`); any other
            // empty label (`.`, `..`, `.a`, `a..b`, `a..`) is no name at all: refused, so that
            // every host has exactly one spelling.
            if bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
            guard !hasEmptyLabel(UnsafeBufferPointer(rebasing: bytes[..<end])) else { return nil }
        }
        let host = UnsafeBufferPointer(rebasing: bytes[..<end])
        guard host.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
            return String(decoding: host, as: UTF8.self)
        }
        return String(unsafeUninitializedCapacity: host.count) { lowered in
            for (index, byte) in host.enumerated() {
                lowered[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return host.count
        }
    }

    /// `host[:port]` with a reg-name of letters, digits, `-._~` and sub-delimiters other than
    /// `,`, or a bracketed IPv6 literal; the port is 1 to 5 digits. Nothing else (no `@`, `/`,
    /// spaces or controls).
    public static func isValidAuthority<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 255 + 6 else { return false }
        var rest = bytes[...]
        if rest.first == UInt8(ascii: "[") {
            guard let close = rest.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let literal = rest[rest.index(after: rest.startIndex)..<close]
            guard !literal.isEmpty, literal.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return false }
            rest = rest[rest.index(after: close)...]
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
