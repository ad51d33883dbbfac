import AuthGateCore
import Foundation
import Testing

@testable import AuthGateCLI

/// `since` of the audit trail, as `authgate audit --since` and `GET /admin/audit?since=` read it:
/// Unix seconds by the same rule in both, and durations ago for operators.
@Suite("Audit since")
struct AuditSinceTests {
    @Test("whole Unix seconds from 0 to the end of year 9999, digits only")
    func unixSeconds() {
        #expect(AuditQuery.since(unixSeconds: "0") == Date(timeIntervalSince1970: 0))
        #expect(AuditQuery.since(unixSeconds: "1795503230") == Date(timeIntervalSince1970: 1_795_503_230))
        #expect(AuditQuery.since(unixSeconds: "253402300799") != nil)
        for bad in ["", "-1", "+5", " 5", "5 ", "1.5", "253402300800", "9223372036854775807", "99999999999999999999", "0x10"] {
            #expect(AuditQuery.since(unixSeconds: bad) == nil, "\(bad)")
        }
    }

    @Test("--since takes Unix seconds or a duration ago (s, m, h, d up to 100,000), nothing else")
    func durations() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(AuditCommand.parseSince("1795503230", now: now) == Date(timeIntervalSince1970: 1_795_503_230))
        #expect(AuditCommand.parseSince("90s", now: now) == now.addingTimeInterval(-90))
        #expect(AuditCommand.parseSince("15m", now: now) == now.addingTimeInterval(-900))
        #expect(AuditCommand.parseSince("2h", now: now) == now.addingTimeInterval(-7200))
        #expect(AuditCommand.parseSince("7d", now: now) == now.addingTimeInterval(-604_800))
        for bad in ["m", "+5m", "-5m", " 5m", "5 m", "100001d", "5w", "5M", "1.5h", "-1", ""] {
            #expect(AuditCommand.parseSince(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("--since takes an RFC 3339 time with its offset (fractions allowed) or a bare date, strictly")
    func times() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(AuditCommand.parseSince("2026-11-24T10:00:00Z", now: now) == Date(timeIntervalSince1970: 1_795_514_400))
        #expect(AuditCommand.parseSince("2026-11-24T12:00:00+02:00", now: now) == Date(timeIntervalSince1970: 1_795_514_400))
        let fraction = AuditCommand.parseSince("2026-11-24T10:00:00.250Z", now: now)?.timeIntervalSince1970 ?? 0
        #expect(abs(fraction - 1_795_514_400.25) < 0.001)
        #expect(AuditCommand.parseSince("2026-11-24", now: now) == Date(timeIntervalSince1970: 1_795_478_400))
        #expect(AuditCommand.parseSince("2024-02-29", now: now) == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(AuditCommand.parseSince("1969-12-31T23:59:59-00:01", now: now) == Date(timeIntervalSince1970: 59))
        for bad in [
            "2026-11-24T10:00:00", "2026-11-24 10:00:00Z", "2026-11-24t10:00:00z", "2026-13-24T10:00:00Z", " 2026-11-24T10:00:00Z",
            "2026-11-24T10:00:00Zjunk", "2026-11-24x", "2026-11-2", "26-11-24", "2026/11/24", "2026-02-30", "2025-02-29", "2026-1-024",
            "2026-11-24T24:00:00Z", "2026-11-24T10:60:00Z", "2026-11-24T10:00:60Z", "2026-11-24T10:00:00.Z", "2026-11-24T10:00:00.1234567891Z",
            "2026-11-24T10:00:00+2:00", "2026-11-24T10:00:00+02:60", "2026-11-24T10:00:00+0200", "2026-11-24T10:00:00z", "２026-11-24"
        ] {
            #expect(AuditCommand.parseSince(bad, now: now) == nil, "\(bad)")
        }
    }
}
