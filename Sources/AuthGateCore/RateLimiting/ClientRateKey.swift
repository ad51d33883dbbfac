/// What a per-client-address rate limit counts a request under.
///
/// An IPv6 subscriber is given a whole /64 or more (RFC 6177), and picks any address in it at will
/// (privacy addresses, RFC 8981): counted per address, every request could come with a fresh
/// budget. IPv6 addresses are counted by their network of `ipv6PrefixLength` bits
/// (`rate_limits.ipv6_prefix_length`, 64 by default); IPv4 addresses, and IPv4 addresses written
/// as IPv6 (`::ffff:192.0.2.1`), by the address itself, in one spelling.
public enum ClientRateKey {
    /// The key for `address` (text form, as ``IPNetwork/parseAddress(_:)`` reads it); an
    /// address that does not parse (`unknown`) is its own key.
    public static func key(for address: String, ipv6PrefixLength: Int) -> String {
        guard let parsed = IPNetwork.parseAddress(address) else { return address }
        let bytes = IPNetwork.unmapped(parsed)
        guard bytes.count == 16 else { return IPNetwork.text(of: bytes) ?? address }
        return IPNetwork(bytes: bytes, prefixLength: ipv6PrefixLength).description
    }
}
