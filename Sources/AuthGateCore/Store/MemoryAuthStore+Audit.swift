import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The audit trail in memory: the newest 100,000 events, written at once.
extension MemoryAuthStore {
    public nonisolated func recordAudit(_ event: AuditEvent) {
        auditTrail.withLock { trail in
            var stored = event
            trail.sequence += 1
            stored.id = "\(event.at.unixMilliseconds)-\(trail.sequence)"
            trail.events.append(stored)
            if trail.events.count > AuditQuery.scanLimit { trail.events.removeFirst(trail.events.count - AuditQuery.scanLimit) }
        }
    }

    public nonisolated func flushAudit() async throws {}

    public nonisolated func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        let events = auditTrail.withLock { $0.events }
        if let after = query.after {
            let start = (events.firstIndex { $0.id == after }).map { $0 + 1 } ?? 0
            return Array(events[start...].filter(query.matches).prefix(query.limit))
        }
        return Array(events.reversed().filter(query.matches).dropFirst(query.offset).prefix(query.limit))
    }

    public nonisolated func auditEventExists(id: String) async throws -> Bool {
        auditTrail.withLock { trail in trail.events.contains { $0.id == id } }
    }
}

/// The memory store's audit events and the counter that makes their ids.
struct MemoryAuditTrail {
    var events: [AuditEvent] = []
    var sequence = 0
}
