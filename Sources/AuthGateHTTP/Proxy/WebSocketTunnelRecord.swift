import AuthGateCore

/// One WebSocket tunnel as the metrics count it: opened once both relays are in place, closed
/// when the client side's relay leaves its pipeline (every tunnel's client connection or
/// stream closes in the end), with the first reason either side gave for ending it
/// (`authgate_websocket_tunnels_opened_total`, `authgate_websocket_tunnels`,
/// `authgate_websocket_tunnels_closed_total`). Shared by the tunnel's two relays, which run on
/// one event loop.
final class WebSocketTunnelRecord {
    private var open = false
    private var outcome: String?

    /// Both relays are in place.
    func opened(httpVersion: String) {
        guard !open else { return }
        open = true
        GatewayMetrics.webSocketOpened(httpVersion: httpVersion)
    }

    /// Why the tunnel ends, if no reason was given before.
    func ending(_ outcome: String) {
        if self.outcome == nil { self.outcome = outcome }
    }

    /// The client side is gone: counted once, and only for a tunnel counted as opened.
    func closed() {
        guard open else { return }
        open = false
        GatewayMetrics.webSocketClosed(outcome: outcome ?? "closed")
    }
}

@available(*, unavailable)
extension WebSocketTunnelRecord: Sendable {}
