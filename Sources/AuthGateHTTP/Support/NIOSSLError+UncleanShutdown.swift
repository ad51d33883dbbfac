import NIOSSL

extension NIOSSLError {
    /// Whether `error` is NIOSSL's report of a TLS peer that closed its TCP connection without
    /// `close_notify` (browsers and many servers do). NIOSSL sends the end of input (or the close)
    /// right after it: it is that peer's FIN, not an error of its own.
    static func isUncleanShutdown(_ error: any Error) -> Bool {
        if let error = error as? NIOSSLError, case .uncleanShutdown = error { return true }
        return false
    }
}
