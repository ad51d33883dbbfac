import Synchronization

/// Things open at once against a limit, shared by every event loop: client connections against
/// `server.max_connections`, WebSocket tunnels against `proxy.max_websocket_tunnels`. Touched
/// when one opens and when it closes, never per request.
final class BoundedCounter: Sendable {
    /// Most open at once.
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Counts one more; false when the limit is reached (nothing is counted).
    func tryTake() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Counts one fewer.
    func giveBack() {
        open.subtract(1, ordering: .relaxed)
    }

    /// Open now.
    var count: Int { open.load(ordering: .relaxed) }
}
