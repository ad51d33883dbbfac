import Foundation

/// Sends raw bytes to a loopback port and returns the status line of the answer: for testing
/// request framing that no well-behaved HTTP client would produce.
public enum RawHTTP {
    public static func statusLine(port: Int, request: String) throws -> String {
        let connection = try RawConnection(port: port)
        connection.send(request)
        let received = connection.receive(maximum: 4096)
        guard !received.isEmpty else { return "" }
        let text = String(decoding: received, as: UTF8.self)
        return String(text.split(separator: "\r\n", maxSplits: 1).first ?? "")
    }
}

/// A blocking loopback TCP connection with a small receive buffer, for tests that control
/// exactly when bytes are read (a client that stops reading).
public final class RawConnection {
    private let descriptor: Int32

    public init(port: Int, receiveBuffer: Int = 64 << 10) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestSupportError("socket() failed") }
        var size = Int32(receiveBuffer)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestSupportError("connect() failed")
        }
    }

    deinit { close(descriptor) }

    public func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// Up to `maximum` bytes; empty at the end of the stream or after the 10 s receive timeout.
    public func receive(maximum: Int = 64 << 10) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let received = recv(descriptor, &buffer, maximum, 0)
        return received > 0 ? Array(buffer.prefix(received)) : []
    }
}
