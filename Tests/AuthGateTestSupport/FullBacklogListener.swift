import Foundation

/// A loopback port where a TCP connect hangs: a listener with a backlog of 0 that never accepts,
/// its one queue slot taken by a connection of its own. Linux then drops every further SYN, so a
/// client's connect neither succeeds nor fails until its own timeout, as with an upstream behind
/// a firewall that drops packets.
public final class FullBacklogListener: Sendable {
    private let listener: Int32
    private let filler: RawConnection
    /// The port where connects hang.
    public let port: Int

    public init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestSupportError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 0) == 0 && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw TestSupportError("could not listen with a zero backlog")
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        do {
            filler = try RawConnection(port: port)
        } catch {
            close(listener)
            throw error
        }
        self.listener = listener
        self.port = port
    }

    deinit { close(listener) }
}
