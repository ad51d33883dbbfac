import Dispatch
import Foundation
import Synchronization

/// A blocking loopback TCP connection with a small receive buffer, for tests that control
/// exactly when bytes are read (a client that stops reading).
public final class RawConnection: Sendable {
    private let descriptor: Int32
    private let failure = Mutex<Int32>(0)

    /// The `errno` of the last failed receive (`EAGAIN` for the receive timeout, `ECONNRESET`
    /// for a reset), 0 when none failed: tells a silent peer from a reset one.
    public var receiveError: Int32 { failure.withLock { $0 } }

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
        // The connect is bounded (5 s): a listener whose accept queue is full drops the SYN, and a
        // blocking connect then waits out the kernel's retransmissions (about 31 s to the fifth).
        // Tests call this from Swift concurrency's threads, two on a two-core machine: two such
        // connects (probes of a gateway shutting down) once held every test for 30 s, twice.
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        let started = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // No close here: every stored property is set, so a throw runs deinit, which closes the
        // descriptor. Closing it here too closed it twice, and the second close hit whatever
        // socket another test had opened on the reused number meanwhile (recv: EBADF).
        if started != 0 {
            guard errno == EINPROGRESS else { throw TestSupportError("connect() failed") }
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            var ready: Int32
            repeat { ready = poll(&poller, 1, 5_000) } while ready < 0 && errno == EINTR
            guard ready == 1 else { throw TestSupportError("connect() did not complete within 5 s") }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0 else {
                throw TestSupportError("connect() failed")
            }
        }
        _ = fcntl(descriptor, F_SETFL, flags)
    }

    deinit { close(descriptor) }

    /// Sends `text` (see ``send(bytes:)``).
    public func send(_ text: String) {
        send(bytes: Array(text.utf8))
    }

    /// ``send(_:)`` on a thread of its own. A send blocks while the peer does not read (a gateway
    /// holding a request body back, up to its `client_idle_timeout`), and an async test must not
    /// hold one of Swift's cooperative threads meanwhile: two such sends on a two-core machine
    /// stop every other test in the process. Async callers get this one.
    public func send(_ text: String) async {
        await Self.offload { self.send(text) }
    }

    /// ``send(bytes:)`` on a thread of its own (see ``send(_:)``).
    public func send(bytes: [UInt8]) async {
        await Self.offload { self.send(bytes: bytes) }
    }

    /// Everything the peer sends until it closes the connection, and whether it did close within
    /// the receive timeout (10 s) of its last byte.
    public func receiveUntilClosed() -> (bytes: [UInt8], closed: Bool) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let received = Self.retryingInterrupted { recv(descriptor, &buffer, buffer.count, 0) }
            if received == 0 { return (bytes, true) }
            if received < 0 {
                let code = errno
                failure.withLock { $0 = code }
                return (bytes, false)
            }
            bytes += buffer.prefix(received)
        }
    }

    /// `call` again while it fails with `EINTR`. A socket with a receive timeout is never
    /// restarted by the kernel after a signal (signal(7)), and the test process gets SIGCHLD
    /// whenever another test's server process exits: read as "no answer", an interrupted `recv`
    /// once failed a test that had been answered.
    private static func retryingInterrupted(_ call: () -> Int) -> Int {
        while true {
            let result = call()
            if result < 0, errno == EINTR { continue }
            return result
        }
    }

    /// Sends raw bytes.
    public func send(bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = Self.retryingInterrupted {
                bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Closes the sending side (the peer reads an end of stream); receiving goes on.
    public func shutdownWrite() {
        _ = Glibc.shutdown(descriptor, Int32(SHUT_WR))
    }

    /// ``receiveUntilClosed()`` on a thread of its own: an async test must not hold one of Swift's
    /// few cooperative threads in a blocking `recv` (on two cores, that starves every other test).
    public func receiveUntilClosed() async -> (bytes: [UInt8], closed: Bool) {
        await Self.offload { self.receiveUntilClosed() }
    }

    /// ``receive(maximum:)`` on a thread of its own (see ``receiveUntilClosed()``).
    public func receive(maximum: Int = 64 << 10) async -> [UInt8] {
        await Self.offload { self.receive(maximum: maximum) }
    }

    /// What arrives until a response head is complete (its blank line), with any bytes that
    /// came after it in the same reads: a head may come in more than one read on a loaded
    /// machine. Short only when the stream ends or a receive times out first.
    public func receiveHead() async -> [UInt8] {
        var bytes: [UInt8] = []
        while !bytes.indices.dropLast(3).contains(where: { bytes[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) }) {
            let more = await receive()
            if more.isEmpty { break }
            bytes += more
        }
        return bytes
    }

    /// Runs blocking `work` on a dispatch thread (not NIO's two-thread pool, which other code in
    /// the test process waits on).
    private static func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }

    /// Up to `maximum` bytes; empty at the end of the stream or after the 10 s receive timeout.
    public func receive(maximum: Int = 64 << 10) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let received = Self.retryingInterrupted { recv(descriptor, &buffer, maximum, 0) }
        return received > 0 ? Array(buffer.prefix(received)) : []
    }
}
