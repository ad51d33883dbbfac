import Foundation
import Testing

@testable import AuthGateCore

/// The audit trail's stored form: written member by member, it stays the bytes a ``JSONValue``
/// object of the same members gives, and reads back whole.
@Suite("Audit event coding", .timeLimit(.minutes(1)))
struct AuditEventCodingTests {
    /// What `encoded()` wrote before it was written member by member: a dictionary, serialized.
    private static func reference(_ event: AuditEvent) -> [UInt8] {
        var members: [String: JSONValue] = ["action": .string(event.action), "actor": .string(event.actor), "at": .integer(event.at.unixMilliseconds)]
        if let userID = event.userID { members["user_id"] = .string(userID) }
        if let ip = event.ip { members["ip"] = .string(ip) }
        if let requestID = event.requestID { members["request_id"] = .string(requestID) }
        if !event.detail.isEmpty { members["detail"] = .object(event.detail.mapValues { .string($0) }) }
        return JSONValue.object(members).serialized()
    }

    @Test("every optional member present or absent, details with escapes and non-ASCII names: the bytes JSONValue writes, read back whole")
    func sameBytesAndRoundTrip() throws {
        let at = Date(timeIntervalSince1970: 1_764_000_000.123)
        let details: [[String: String]] = [
            [:], ["provider": "apple"], ["session_id": "s1", "provider": "google", "reason": "quote \" backslash \\ newline \n tab \t"],
            ["é": "1", "ü": "2", "z": "\u{1}", "A": "\u{7f}"]
        ]
        var checked = 0
        for detail in details {
            for userID in [nil, "4f1c-user"] {
                for ip in [nil, "203.0.113.9"] {
                    for requestID in [nil, "req-1"] {
                        let event = AuditEvent(
                            action: "login", actor: "cli:ops \"x\"", userID: userID, at: at, ip: ip, requestID: requestID, detail: detail)
                        let bytes = event.encoded()
                        #expect(bytes == Self.reference(event), "\(String(decoding: bytes, as: UTF8.self))")
                        let read = try #require(AuditEvent.decode(bytes, id: "1-0"))
                        var expected = event
                        expected.id = "1-0"
                        expected.at = Date(timeIntervalSince1970: Double(at.unixMilliseconds) / 1000)
                        #expect(read == expected)
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 32)
    }
}
