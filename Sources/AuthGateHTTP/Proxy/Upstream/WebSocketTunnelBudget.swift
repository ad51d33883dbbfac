import Synchronization

/// The process's WebSocket tunnels against `proxy.max_websocket_tunnels`. Each tunnel has an
/// upstream connection of its own, outside the pool's per-upstream limit, and over HTTP/2 one
/// client connection carries as many tunnels as it may open streams, so neither
/// `server.max_connections` nor the pool bounds them. A place is taken before the upstream
/// connection is made and given back when that connection closes, or at once when it could not
/// be made: a refused handshake, a failed one and an ended tunnel each give theirs back, whatever
/// path they took.
final class WebSocketTunnelBudget: Sendable {
    /// Most tunnels at once.
    let limit: Int
    private let taken = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a place; false when all are taken.
    func take() -> Bool {
        var current = taken.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = taken.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives a place back.
    func giveBack() {
        taken.subtract(1, ordering: .relaxed)
    }

    /// The places taken now.
    var inUse: Int { taken.load(ordering: .relaxed) }
}
