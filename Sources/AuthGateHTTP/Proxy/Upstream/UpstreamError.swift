/// Why an exchange with an upstream failed.
enum UpstreamError: Error, Equatable {
    /// No connection could be made (refused, unreachable, TLS handshake failed).
    case connectFailed
    /// No connection within the route's `connect_timeout`.
    case connectTimeout
    /// No response head within the route's `timeout`.
    case headTimeout
    /// The upstream was silent for the route's `idle_timeout` while a read was wanted.
    case idleTimeout
    /// The connection closed or broke; `beforeResponse` when not a byte of the response had come.
    case connectionLost(beforeResponse: Bool)
    /// The upstream answered something that is not HTTP/1.1 we can relay (a second head, an upgrade).
    case protocolViolation

    /// Timeouts answer 504; everything else 502.
    var isTimeout: Bool {
        self == .headTimeout || self == .idleTimeout
    }
}
