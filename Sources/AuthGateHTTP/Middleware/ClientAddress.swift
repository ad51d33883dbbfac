public import AuthGateCore
public import HTTPTypes
import Hummingbird
public import NIOCore
public import NIOHTTP1

/// The client's IP address: the TCP peer, unless the peer is a trusted proxy, in which case the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
public struct ClientAddress: Sendable, Equatable {
    static let forwardedFor = HTTPField.Name.constant("X-Forwarded-For")

    /// The client's address as text.
    public let address: String
    /// Whether the TCP peer is one of `trusted_proxies` (its forwarding headers may be kept).
    public let peerIsTrusted: Bool

    /// Resolves the client address of a request with `headers` arriving from `peer`.
    public static func resolve(_ headers: HTTPFields, peer: SocketAddress?, trustedProxies: [IPNetwork]) -> ClientAddress {
        resolve(forwardedFor: { headers[values: forwardedFor] }, peer: peer, trustedProxies: trustedProxies)
    }

    /// Resolves the client address of a request with `headers` (NIO's form) arriving from `peer`.
    public static func resolve(_ headers: HTTPHeaders, peer: SocketAddress?, trustedProxies: [IPNetwork]) -> ClientAddress {
        resolve(forwardedFor: { headers["X-Forwarded-For"] }, peer: peer, trustedProxies: trustedProxies)
    }

    /// Resolves the client address of a request with `headers` from a peer whose address text
    /// (``SocketAddress/ipAddress``) the caller already has (once per connection, not per request).
    public static func resolve(_ headers: HTTPHeaders, peerAddress: String?, trustedProxies: [IPNetwork]) -> ClientAddress {
        resolve(forwardedFor: { headers["X-Forwarded-For"] }, peerAddress: peerAddress ?? "unknown", trustedProxies: trustedProxies)
    }

    private static func resolve(forwardedFor: () -> [String], peer: SocketAddress?, trustedProxies: [IPNetwork]) -> ClientAddress {
        resolve(forwardedFor: forwardedFor, peerAddress: peer?.ipAddress ?? "unknown", trustedProxies: trustedProxies)
    }

    /// `forwardedFor` is read only when the peer is trusted.
    private static func resolve(forwardedFor: () -> [String], peerAddress: String, trustedProxies: [IPNetwork]) -> ClientAddress {
        guard !trustedProxies.isEmpty else { return ClientAddress(address: peerAddress, peerIsTrusted: false) }
        guard isTrusted(peerAddress, trustedProxies) else { return ClientAddress(address: peerAddress, peerIsTrusted: false) }
        let hops = forwardedFor().flatMap { $0.split(separator: ",") }.map(\.trimmingOWS).filter { !$0.isEmpty }
        for hop in hops.reversed() where !isTrusted(hop, trustedProxies) {
            return ClientAddress(address: canonical(hop) ?? peerAddress, peerIsTrusted: true)
        }
        return ClientAddress(address: hops.first.flatMap(canonical) ?? peerAddress, peerIsTrusted: true)
    }

    /// A forwarded address in one spelling (`[2001:DB8::0:1]` is `2001:db8::1`), as the socket's
    /// own is written; nil when it is not an address.
    private static func canonical(_ hop: String) -> String? {
        IPNetwork.parseAddress(hop).flatMap(IPNetwork.text(of:))
    }

    private static func isTrusted(_ address: String, _ proxies: [IPNetwork]) -> Bool {
        proxies.contains { $0.contains(address) }
    }
}
