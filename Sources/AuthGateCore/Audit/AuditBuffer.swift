import Synchronization

/// Audit events waiting to be written: recorded without a store round trip on the request's path
/// and written in batches (one Redis call each) by ``AuditFlusher`` every 200 ms, on every read of
/// the trail, at shutdown, and at the end of each CLI command. At most 10,000 wait; past that the
/// oldest are dropped and counted (`authgate_audit_dropped_total`), never the request failed.
public final class AuditBuffer: Sendable {
    private let pending = Mutex<[AuditEvent]>([])
    static let capacity = 10_000

    public init() {}

    /// Adds an event.
    public func record(_ event: AuditEvent) {
        let dropped = pending.withLock { events -> Int in
            events.append(event)
            guard events.count > Self.capacity else { return 0 }
            let excess = events.count - Self.capacity
            events.removeFirst(excess)
            return excess
        }
        if dropped > 0 { GatewayMetrics.auditDropped(dropped) }
    }

    /// Takes every waiting event, oldest first.
    func take() -> [AuditEvent] {
        pending.withLock { events in
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
    }

    /// Puts events back in front (a write that failed), within the capacity.
    func putBack(_ events: [AuditEvent]) {
        pending.withLock { waiting in
            waiting = Array((events + waiting).suffix(Self.capacity))
        }
    }
}
