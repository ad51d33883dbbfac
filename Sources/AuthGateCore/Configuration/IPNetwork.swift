import RedisBridge
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR form (`10.0.0.0/8`, `::1/128`); a bare address is a /32 or /128.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network address bytes (4 or 16), already masked.
    public let bytes: [UInt8]
    /// The prefix length.
    public let prefixLength: Int

    /// Parses CIDR notation; nil when it is not an address or the prefix is out of range.
    public init?(_ text: String) {
        let parts = text.trimmed.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = parts.first, let bytes = Self.parseAddress(String(address)) else { return nil }
        let maximum = bytes.count * 8
        var prefix = maximum
        if parts.count == 2 {
            guard let value = DecimalInteger.parse(parts[1], in: 0...maximum) else { return nil }
            prefix = value
        }
        self.prefixLength = prefix
        self.bytes = Self.mask(bytes, prefixLength: prefix)
    }

    /// True when `address` (text form) lies in this network. IPv4-mapped IPv6 addresses
    /// (`::ffff:10.0.0.1`) match IPv4 networks.
    public func contains(_ address: String) -> Bool {
        guard var candidate = Self.parseAddress(address) else { return false }
        if bytes.count == 4 { candidate = Self.unmapped(candidate) }
        guard candidate.count == bytes.count else { return false }
        return Self.mask(candidate, prefixLength: prefixLength) == bytes
    }

    /// The network of `prefixLength` bits (clamped to the address's size) that holds the
    /// address `bytes` (4 or 16 of them).
    public init(bytes: [UInt8], prefixLength: Int) {
        self.prefixLength = min(max(0, prefixLength), bytes.count * 8)
        self.bytes = Self.mask(bytes, prefixLength: self.prefixLength)
    }

    public var description: String { "\(Self.text(of: bytes) ?? "?")/\(prefixLength)" }

    /// The 4 bytes of the IPv4 address an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) carries;
    /// any other address's bytes as they are.
    public static func unmapped(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 16, bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] else { return bytes }
        return Array(bytes.suffix(4))
    }

    /// The text form of 4 or 16 address bytes (RFC 5952 for IPv6: lower case, no leading zeros,
    /// the longest run of zero groups as `::`); nil for any other count.
    public static func text(of bytes: [UInt8]) -> String? {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        return bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)).map { _ in
                String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
    }

    /// The bytes of an IPv4 (4) or IPv6 (16) address in text form; nil when it is not one.
    public static func parseAddress(_ text: String) -> [UInt8]? {
        var address = text
        if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func mask(_ bytes: [UInt8], prefixLength: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bitsHere = max(0, min(8, prefixLength - index * 8))
            return bitsHere == 8 ? byte : byte & ~(UInt8(0xff) >> bitsHere)
        }
    }
}
