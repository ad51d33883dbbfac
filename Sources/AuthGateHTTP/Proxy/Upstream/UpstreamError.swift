/// Why an exchange with an upstream failed.
enum UpstreamError: Error, Equatable, Sendable {
    /// No connection could be made (refused, unreachable).
    case connectFailed
    /// The TLS handshake failed: the upstream's certificate did not verify, the upstream did not
    /// speak TLS or refused ours. Never answered by retrying without TLS or verification.
    case tlsHandshakeFailed(reason: String)
    /// No connection within the route's `connect_timeout`.
    case connectTimeout
    /// No response head within the route's `timeout` after the request was sent.
    case headTimeout
    /// The upstream was silent for the route's `idle_timeout` while a read was wanted.
    case idleTimeout
    /// The connection closed or broke; `beforeResponse` when not a byte of the response had come.
    case connectionLost(beforeResponse: Bool)
    /// The upstream answered something that is not HTTP/1.1 we can relay (a second head, an
    /// unasked-for upgrade, bytes between exchanges).
    case protocolViolation
    /// A WebSocket handshake found every place of `proxy.max_websocket_tunnels` taken: no
    /// connection was tried, and the upstream is not to blame (503).
    case tunnelLimitReached

    /// An upstream that accepted the request but did not answer in time: 504. Everything else
    /// (no connection at all included) is 502, but ``tunnelLimitReached`` (503).
    var isTimeout: Bool {
        self == .headTimeout || self == .idleTimeout
    }

    /// No connection was made: the upstream is marked failed and another may be tried.
    var isConnectFailure: Bool {
        switch self {
        case .connectFailed, .connectTimeout, .tlsHandshakeFailed: true
        default: false
        }
    }

    /// The `kind` label of `authgate_upstream_errors_total`.
    var metricKind: String {
        switch self {
        case .connectFailed, .connectTimeout: "connect"
        case .tlsHandshakeFailed: "tls"
        case .headTimeout, .idleTimeout: "timeout"
        case .connectionLost: "connection_lost"
        case .protocolViolation: "protocol"
        case .tunnelLimitReached: "tunnel_limit"
        }
    }
}
