import AuthGateTestSupport
import Foundation
import Testing

@testable import AuthGateCore

/// `authgate audit --follow`: what each poll returns and where the next one starts.
@Suite("Following the audit trail", .timeLimit(.minutes(2)))
struct AuditFollowerTests {
    /// The follower advanced only on events its query matched: with `--user`, every poll read
    /// (XRANGE, up to 100,000 entries) everything since that user's last event again; and the
    /// command printed each batch newest first.
    @Test("each poll: the matching events since, oldest first; the position moves past every event read", arguments: TestStoreKind.allCases)
    func follows(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let (alice, bob) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
            func record(_ users: [String]) async throws {
                for (index, user) in users.enumerated() { store.recordAudit(.now("logout", userID: user, detail: ["n": "\(index)"])) }
                try await store.flushAudit()
            }
            try await record([alice, bob, alice, bob, bob])
            var follower = AuditFollower(query: AuditQuery(userID: alice), from: "0-0")
            let first = try await follower.next(from: store)
            #expect(first.map(\.detail) == [["n": "0"], ["n": "2"]], "oldest first, Alice's only")
            let newest = try #require(try await store.auditEvents(AuditQuery(limit: 1)).first?.id)
            #expect(follower.position == newest, "past Bob's events too")
            #expect(try await follower.next(from: store).isEmpty)
            try await record([bob, alice])
            #expect(try await follower.next(from: store).map(\.detail) == [["n": "1"]])
            // A burst larger than one read: the follower says so, and the next call goes on.
            try await record(Array(repeating: bob, count: AuditFollower.batchSize) + [alice])
            #expect(try await follower.next(from: store).isEmpty && follower.readFullBatch)
            #expect(try await follower.next(from: store).count == 1 && !follower.readFullBatch)
        }
    }
}
