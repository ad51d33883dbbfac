public import AuthGateCore
public import HTTPTypes
public import Hummingbird
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
            return ClientAddress(address: IPNetwork.parseAddress(hop) == nil ? peerAddress : hop, peerIsTrusted: true)
        }
        let first = hops.first.flatMap { IPNetwork.parseAddress($0) == nil ? nil : $0 }
        return ClientAddress(address: first ?? peerAddress, peerIsTrusted: true)
    }

    private static func isTrusted(_ address: String, _ proxies: [IPNetwork]) -> Bool {
        proxies.contains { $0.contains(address) }
    }
}
