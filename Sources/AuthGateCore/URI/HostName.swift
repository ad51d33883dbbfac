import RedisBridge

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `Host` of a request in the one form routes are matched on: lower case, without the port
/// and without a trailing dot (`API.Example.com.:443` is `api.example.com`); an IPv6 literal in
/// RFC 5952 form (`[0:0::01]` is `[::1]`); an IPv4 address only in dotted decimal (`127.1` and
/// `0x7f.0.0.1` are refused).
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
        if bytes[0] == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            return ipv6Literal(UnsafeBufferPointer(rebasing: bytes[1..<close])).map { "[\($0)]" }
        }
        // The name ends at the port's colon.
        var end = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.count
        // One trailing dot is the root label (`example.com.` is `example.com`); any other empty
        // label (`.`, `..`, `.a`, `a..b`, `a..`) is no name at all: refused, so that every host
        // has exactly one spelling.
        if bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
        let host = UnsafeBufferPointer(rebasing: bytes[..<end])
        guard !hasEmptyLabel(host), !isOtherSpellingOfIPv4(host) else { return nil }
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
    /// `,`, or a bracketed IPv6 literal (RFC 4291 text, no zone); the port is a number from 1 to
    /// 65535 without leading zeros. Nothing else (no `@`, `/`, spaces or controls, no empty port).
    public static func isValidAuthority<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 255 + 6 else { return false }
        var rest = bytes[...]
        if rest.first == UInt8(ascii: "[") {
            guard let close = rest.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let literal = rest[rest.index(after: rest.startIndex)..<close]
            guard literal.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                Array(literal).withUnsafeBufferPointer({ ipv6Address($0) }) != nil
            else { return false }
            rest = rest[rest.index(after: close)...]
        } else {
            let end = rest.firstIndex(of: UInt8(ascii: ":")) ?? rest.endIndex
            let name = rest[..<end]
            guard !name.isEmpty, name.allSatisfy(isRegNameByte) else { return false }
            rest = rest[end...]
        }
        if rest.isEmpty { return true }
        guard rest.first == UInt8(ascii: ":") else { return false }
        return isPort(rest.dropFirst())
    }

    /// A port in its one spelling: 1 to 65535, no leading zero (`:0`, `:080` and `:65536` are
    /// refused rather than passed on to an upstream that would read them its own way).
    private static func isPort<Bytes: Collection<UInt8>>(_ digits: Bytes) -> Bool {
        digits.first != UInt8(ascii: "0") && DecimalInteger.parse(digits, in: 1...65_535) != nil
    }

    /// The 16 bytes of an IPv6 address in text form (`::1`, `::ffff:1.2.3.4`); nil for anything
    /// else, an IPv4 address included.
    private static func ipv6Address(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        // The longest IPv6 text is 45 bytes (INET6_ADDRSTRLEN less its NUL).
        guard !text.isEmpty, text.count <= 45 else { return nil }
        var terminated = [CChar](repeating: 0, count: text.count + 1)
        for (index, byte) in text.enumerated() { terminated[index] = CChar(bitPattern: byte) }
        var address = in6_addr()
        guard inet_pton(AF_INET6, terminated, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// An IPv6 literal's one spelling (RFC 5952: `0:0::01` and `::1` are both `::1`).
    private static func ipv6Literal(_ text: UnsafeBufferPointer<UInt8>) -> String? {
        ipv6Address(text).flatMap(IPNetwork.text(of:))
    }

    /// A name whose last label is a number (`1`, `0x7f`) reads as an IPv4 address to resolvers
    /// and browsers (WHATWG URL's "ends in a number"), which also take `127.1`, `0177.0.0.1` and
    /// `2130706433` for `127.0.0.1`. Only the dotted-decimal form without leading zeros is kept,
    /// so that an address has one spelling to match routes on.
    private static func isOtherSpellingOfIPv4(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let lastLabel = name.lastIndex(of: UInt8(ascii: ".")).map { name[($0 + 1)...] } ?? name[...]
        let isHex =
            lastLabel.count >= 2 && lastLabel.first == UInt8(ascii: "0") && lastLabel.dropFirst().first.map { $0 | 0x20 } == UInt8(ascii: "x")
            && lastLabel.dropFirst(2).allSatisfy(isHexDigit)
        guard isHex || lastLabel.allSatisfy(isDecimalDigit) else { return false }
        // Four labels of 1-3 digits, each 0-255 without a leading zero.
        var labels = 1
        var digits = 0
        var value = 0
        var leadingZero = false
        for byte in name {
            if byte == UInt8(ascii: ".") {
                labels += 1
                digits = 0
                value = 0
                continue
            }
            guard isDecimalDigit(byte), digits < 3, !leadingZero || digits == 0 else { return true }
            if digits == 0 { leadingZero = byte == UInt8(ascii: "0") }
            digits += 1
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            guard value <= 255 else { return true }
        }
        return labels != 4
    }

    private static func isDecimalDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
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
