public import AuthGateCore
import HTTPTypes
public import Hummingbird
public import NIOCore

/// The client's IP address: the TCP peer, unless the peer is a trusted proxy, in which case the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
public enum ClientAddress {
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// Resolves the client address of `request` arriving from `peer`.
    public static func resolve(_ request: Request, peer: SocketAddress?, trustedProxies: [IPNetwork]) -> String {
        let peerAddress = peer?.ipAddress ?? "unknown"
        guard isTrusted(peerAddress, trustedProxies) else { return peerAddress }
        let hops = request.headers[values: forwardedFor].flatMap { $0.split(separator: ",") }.map(\.trimmingOWS).filter { !$0.isEmpty }
        for hop in hops.reversed() where !isTrusted(hop, trustedProxies) {
            return IPNetwork.parseAddress(hop) == nil ? peerAddress : hop
        }
        return hops.first.flatMap { IPNetwork.parseAddress($0) == nil ? nil : $0 } ?? peerAddress
    }

    private static func isTrusted(_ address: String, _ proxies: [IPNetwork]) -> Bool {
        proxies.contains { $0.contains(address) }
    }
}
