import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge
import Testing

@testable import AuthGateCore

/// Background loops that find the store down say so once per 10 s with a count: the revocation
/// outbox is polled every second and audit events are flushed five times a second, and each
/// failed pass wrote a warning (86,400 lines a day of one outage, per replica).
@Suite("Background loops during a store outage", .timeLimit(.minutes(1)))
struct BackgroundOutageLogTests {
    @Test("twenty failed outbox passes and twenty failed audit flushes: one warning each")
    func oncePerInterval() async throws {
        // A Redis store on a port nothing listens on.
        try await withRedisStore(at: RedisURL(host: "127.0.0.1", port: try freeLoopbackPort())) { store in
            let lines = RecordedLines()
            let logger = Logger(label: "outage") { _ in RecordedLines.Handler(lines: lines) }
            let worker = ProviderRevocationWorker(store: store, revoker: ProviderTokenRevoker(sealer: nil, apple: nil, google: nil), logger: logger)
            for _ in 0..<20 { #expect(await worker.workOnce(now: Date()) == 0) }
            let flusher = AuditFlusher(store: store, logger: logger)
            for index in 0..<20 {
                store.recordAudit(.now("login", userID: "u-\(index)"))
                await flusher.flush()
            }
            #expect(lines.count(of: "provider revocation outbox unavailable") == 1, "\(lines.messages)")
            #expect(lines.count(of: "audit events not written yet; kept for the next try") == 1, "\(lines.messages)")
        }
    }
}
