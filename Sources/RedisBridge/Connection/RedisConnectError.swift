import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a TCP connection could not be made, in a few words (`connection refused`, `no answer within
/// 500 ms`), without the library's internal types that NIO's errors print.
enum RedisConnectError {
    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return describe(first.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "the host name did not resolve" }
            return "no address to connect to"
        }
        if let error = error as? IOError { return describe(errno: error.errnoCode) }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout(let amount): return "no answer within \(amount.nanoseconds / 1_000_000) ms"
            case .ioOnClosedChannel, .alreadyClosed, .eof: return "the connection closed"
            default: return "the connection failed"
            }
        }
        if error is SocketAddressError { return "the host name did not resolve" }
        return "the connection failed"
    }

    /// The usual connect failures by errno; others by number.
    static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused"
        case ETIMEDOUT: return "timed out"
        case EHOSTUNREACH: return "host unreachable"
        case ENETUNREACH: return "network unreachable"
        case ECONNRESET: return "connection reset"
        case EADDRNOTAVAIL: return "address not available"
        case EACCES, EPERM: return "not permitted"
        default: return "socket error \(code)"
        }
    }
}
