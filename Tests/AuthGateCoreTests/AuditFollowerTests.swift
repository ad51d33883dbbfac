import AuthGateTestSupport
import Foundation
import RedisBridge
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

    /// A failed read used to end `audit --follow`. Now the position stays, and the wait before
    /// the next read doubles from half a second to five, then is half a second again once a read
    /// succeeds.
    @Test("a failed read keeps the position and doubles the wait up to 5 s; a good read resets it")
    func outage() async throws {
        let position = "1764000000000-3"
        var follower = AuditFollower(query: AuditQuery(), from: position)
        #expect(follower.delay == .zero)
        try await withRedisStore(at: RedisURL(host: "127.0.0.1", port: try freeLoopbackPort())) { unreachable in
            var delays: [Duration] = []
            for _ in 0..<6 {
                let error = await #expect(throws: AuthGateError.self) { _ = try await follower.next(from: unreachable) }
                #expect(error?.code == .storeUnavailable)
                delays.append(follower.delay)
            }
            #expect(delays == [0.5, 1, 2, 4, 5, 5].map { Duration.milliseconds(Int64($0 * 1000)) })
            #expect(follower.position == position && follower.failures == 6)
        }
        try await withTestStore(.redis) { store in
            store.recordAudit(.now("logout", userID: UUID().uuidString.lowercased(), detail: [:]))
            try await store.flushAudit()
            #expect(try await follower.next(from: store).count == 1)
            #expect(follower.failures == 0 && follower.delay == AuditFollower.pollInterval)
        }
    }

    /// The trail drops its oldest events past about 100,000: a follower further behind skipped
    /// what was dropped without a word.
    @Test("a call whose starting event left the trail says so, once; the events after it are still returned")
    func dropped() async throws {
        try await withTestStore(.redis) { anyStore in
            let store = try #require(anyStore as? RedisAuthStore)
            func record(_ count: Int) async throws {
                for index in 0..<count { store.recordAudit(.now("logout", userID: UUID().uuidString.lowercased(), detail: ["n": "\(index)"])) }
                try await store.flushAudit()
            }
            try await record(3)
            var follower = AuditFollower(query: AuditQuery(), from: "0-0")
            #expect(try await follower.next(from: store).count == 3)
            #expect(follower.droppedAfter == nil, "a starting point that is not an event is not checked")
            let reached = follower.position
            #expect(try await follower.next(from: store).isEmpty && follower.droppedAfter == nil, "nothing dropped, nothing said")
            // What 100,000 newer events do: the oldest entries, the follower's among them, dropped.
            let trail = RedisKeyspace(prefix: store.keyPrefix).audit
            try await store.redis.send(RedisCommand("XTRIM", .string(trail), "MAXLEN", 0))
            try await record(2)
            #expect(try await follower.next(from: store).count == 2)
            #expect(follower.droppedAfter == reached)
            #expect(try await follower.next(from: store).isEmpty && follower.droppedAfter == nil, "said once")
            // Everything dropped and nothing new: said once too, then the follower waits on.
            let last = follower.position
            try await store.redis.send(RedisCommand("XTRIM", .string(trail), "MAXLEN", 0))
            #expect(try await follower.next(from: store).isEmpty && follower.droppedAfter == last)
            #expect(try await follower.next(from: store).isEmpty && follower.droppedAfter == nil)
            try await record(1)
            #expect(try await follower.next(from: store).count == 1 && follower.droppedAfter == nil)
        }
    }
}
