import NIOCore
import RedisBridge

/// The audit trail on Redis: a stream capped near 100,000 entries (`XADD … MAXLEN ~`), each entry
/// one event as JSON in field `e`. Events wait in the store's ``AuditBuffer`` and are written in
/// batches of up to 500 per script call.
extension RedisAuthStore {
    /// KEYS: the audit stream. ARGV: events. Returns how many were added.
    static let appendAuditScript = RedisScript(
        """
        for i = 1, #ARGV do
          redis.call('XADD', KEYS[1], 'MAXLEN', '~', '100000', '*', 'e', ARGV[i])
        end
        return #ARGV
        """
    )

    public func recordAudit(_ event: AuditEvent) {
        auditBuffer.record(event)
    }

    public func flushAudit() async throws {
        var waiting = auditBuffer.take()
        while !waiting.isEmpty {
            let batch = Array(waiting.prefix(500))
            do {
                _ = try await run(Self.appendAuditScript, keys: [keys.audit], arguments: batch.map { .byteArray($0.encoded()) })
            } catch {
                auditBuffer.putBack(waiting)
                throw error
            }
            waiting.removeFirst(batch.count)
        }
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        try? await flushAudit()
        let reply: RESPValue
        if let after = query.after {
            // Unfiltered, the first `limit` entries are the answer; filtered, up to the whole trail is read.
            let count = query.userID == nil && query.since == nil ? query.limit : AuditQuery.scanLimit
            reply = try await run(RedisCommand("XRANGE", .string(keys.audit), .string("(" + after), "+", "COUNT", .integer(Int64(count))))
            return Array(Self.events(reply).filter(query.matches).prefix(query.limit))
        }
        let filtered = query.userID != nil
        let count = filtered ? AuditQuery.scanLimit : query.offset + query.limit
        let low = query.since.map { String($0.unixMilliseconds) } ?? "-"
        reply = try await run(RedisCommand("XREVRANGE", .string(keys.audit), "+", .string(low), "COUNT", .integer(Int64(count))))
        return Array(Self.events(reply).filter(query.matches).dropFirst(query.offset).prefix(query.limit))
    }

    public func auditEventExists(id: String) async throws -> Bool {
        let reply = try await run(RedisCommand("XRANGE", .string(keys.audit), .string(id), .string(id), "COUNT", 1))
        return reply.array?.isEmpty == false
    }

    /// The events of an `XRANGE`/`XREVRANGE` reply, in its order.
    private static func events(_ reply: RESPValue) -> [AuditEvent] {
        (reply.array ?? []).compactMap { entry -> AuditEvent? in
            guard let parts = entry.array, parts.count == 2, let id = parts[0].string, let fields = parts[1].array, fields.count >= 2,
                case .bulkString(let buffer) = fields[1]
            else { return nil }
            return AuditEvent.decode(buffer.readableBytesView, id: id)
        }
    }
}
