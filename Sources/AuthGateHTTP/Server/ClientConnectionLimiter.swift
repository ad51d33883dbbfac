import Synchronization

/// The cap on open client connections (`server.max_connections`), shared by every event loop.
/// Touched once when a connection opens and once when it closes, never per request.
final class ClientConnectionLimiter: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection; false when the cap is reached (the connection is refused).
    func tryOpen() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func close() {
        open.subtract(1, ordering: .relaxed)
    }

    /// Connections open now.
    var count: Int { open.load(ordering: .relaxed) }
}
