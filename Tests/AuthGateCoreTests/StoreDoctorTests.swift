import AuthGateTestSupport
import Foundation
import RedisBridge
import Testing

@testable import AuthGateCore

/// `authgate doctor`: a store written by the gateway is consistent; each kind of dangling entry
/// is reported without being touched, then repaired, and the repaired store signs users in as the
/// same users.
@Suite("Store doctor", .timeLimit(.minutes(3)))
struct StoreDoctorTests: AccountsTesting {
    @Test("a consistent store reports nothing; broken references are reported read-only, then repaired")
    func reportAndRepair() async throws {
        try await withService(.redis) { service, store in
            let redis = try #require(store as? RedisAuthStore)
            let doctor = StoreDoctor(store: redis)
            func signIn(_ subject: String) async throws -> IssuedSession {
                try await service.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: subject, email: "\(subject)@example.com"), rawNonce: nil, linkingTo: nil,
                    now: Date())
            }
            let alice = try await signIn("alice")
            let bob = try await signIn("bob")
            let carol = try await signIn("carol")
            _ = try await service.signUpAnonymously(data: [:], now: Date())
            _ = try await service.refresh(alice.refreshToken, now: Date())
            #expect(try await doctor.examine(repair: false) == [], "the gateway's own writes are consistent")

            // Break it as a crash between unordered writes, a partial restore or a hand edit would.
            let p = redis.keyPrefix
            func send(_ arguments: RedisArgument...) async throws {
                try await redis.redis.send(RedisCommand(arguments[0].text, arguments: Array(arguments.dropFirst())))
            }
            try await send("DEL", .string("\(p){u:\(bob.user.id)}:user"))  // bob's record gone, its references left
            try await send("SET", .string("\(p)idn:fake:ghost"), .string(UUIDBytes.random()))  // an index entry naming nobody
            try await send("DEL", .string("\(p)idn:fake:carol"))  // carol cannot be found by her identity
            try await send("ZREM", .string("\(p)users"), .string(carol.user.id))  // nor listed
            try await send("DEL", .string("\(p){u:\(alice.user.id)}:s:\(alice.session.id)"))  // a session entry naming nothing

            let report = try await doctor.examine(repair: false)
            let kinds = Set(report.map(\.kind))
            #expect(
                kinds == [
                    "dangling_identity_index", "dangling_email_index", "dangling_session_owner", "dangling_users_entry", "missing_identity_index",
                    "unlisted_user", "dangling_session_entry", "orphan_record"
                ], "\(report)")
            #expect(report.allSatisfy { !$0.repaired })
            #expect(try await doctor.examine(repair: false).count == report.count, "read-only: nothing changed")

            let repaired = try await doctor.examine(repair: true)
            // Removing bob's orphan session also leaves its owner entry dangling: found and repaired
            // in the same pass.
            #expect(repaired.count == report.count + 1 && repaired.allSatisfy(\.repaired), "\(repaired.filter { !$0.repaired })")
            let after = try await doctor.examine(repair: false)
            #expect(after == [], "\(after)")

            // The repaired store: carol and alice sign in as themselves; bob's identity is free.
            #expect(try await signIn("carol").user.id == carol.user.id)
            #expect(try await signIn("alice").user.id == alice.user.id)
            #expect(try await signIn("bob").user.id != bob.user.id)
            let total = try await store.listUsers(offset: 0, limit: 100).total
            #expect(total == 4, "alice, carol, the anonymous user and bob's new user; listed: \(total)")
        }
    }
}

extension RedisArgument {
    fileprivate var text: String {
        if case .string(let text) = self { return text }
        return ""
    }
}
