import AuthGateTestSupport
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import AuthGateCore

/// The bounded caches (``FIFOCache``, ``StoredRecordCache``): what they keep, what they forget, and
/// that a cached record is never stale.
@Suite("Record and token caches")
struct RecordCacheTests {
    @Test("FIFOCache forgets the oldest insertion first and never holds more than its capacity")
    func fifoOrder() {
        var cache = FIFOCache<Int, String>(capacity: 3)
        for key in 1...3 { cache.insert("v\(key)", for: key) }
        cache.insert("again", for: 2)  // an update: not reordered, nothing forgotten
        #expect(cache.count == 3)
        #expect(cache[2] == "again")
        cache.insert("v4", for: 4)
        #expect(cache[1] == nil, "the oldest insertion goes first")
        #expect(cache[2] == "again" && cache[3] == "v3" && cache[4] == "v4")
        for key in 5...1000 {
            cache.insert("v\(key)", for: key)
            #expect(cache.count <= 3)
        }
        #expect(cache[998] != nil && cache[999] != nil && cache[1000] != nil)
    }

    @Test("FIFOCache: a key removed early and kept again is bounded too; capacity 0 keeps nothing")
    func fifoRemoval() {
        var cache = FIFOCache<Int, Int>(capacity: 2)
        cache.insert(1, for: 1)
        cache.removeValue(forKey: 1)
        cache.insert(1, for: 1)
        cache.insert(2, for: 2)
        cache.insert(3, for: 3)
        #expect(cache.count <= 2)
        #expect(cache[3] == 3)
        var none = FIFOCache<Int, Int>(capacity: 0)
        none.insert(1, for: 1)
        #expect(none.count == 0 && none[1] == nil)
    }

    @Test("StoredRecordCache decodes the same bytes once, other bytes afresh, and keeps no failure")
    func storedRecords() throws {
        let cache = StoredRecordCache<String, String>(capacity: 100)
        let decodes = Atomic(0)
        func decode(_ bytes: [UInt8]) throws -> String {
            decodes.add(1, ordering: .relaxed)
            guard bytes.first == UInt8(ascii: "{") else { throw AuthGateError(.storeCorrupt, "not an object") }
            return String(decoding: bytes, as: UTF8.self)
        }
        func stored(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
        #expect(try cache.record("u1", stored("{a}"), decode: decode) == "{a}")
        #expect(try cache.record("u1", stored("{a}"), decode: decode) == "{a}")
        #expect(decodes.load(ordering: .relaxed) == 1, "the same bytes are decoded once")
        #expect(try cache.record("u1", stored("{b}"), decode: decode) == "{b}", "changed bytes are decoded afresh")
        #expect(try cache.record("u1", stored("{b}x"), decode: decode) == "{b}x", "so are longer ones")
        #expect(try cache.record("u1", stored("{b}"), decode: decode) == "{b}", "and shorter ones")
        #expect(decodes.load(ordering: .relaxed) == 4)
        #expect(try cache.record("u2", stored("{b}"), decode: decode) == "{b}")
        #expect(cache.count == 2, "one record kept per key")
        #expect(throws: AuthGateError.self) { try cache.record("u3", stored("bad"), decode: decode) }
        #expect(throws: AuthGateError.self) { try cache.record("u3", stored("bad"), decode: decode) }
        #expect(decodes.load(ordering: .relaxed) == 7, "a record that does not decode is not kept")
        let large = "{" + String(repeating: "x", count: StoredRecordCache<String, String>.largestCached)
        _ = try cache.record("u4", stored(large), decode: decode)
        #expect(cache.count == 2, "a record over the size limit is not kept")
        let off = StoredRecordCache<String, String>(capacity: 0)
        _ = try off.record("u1", stored("{a}"), decode: decode)
        #expect(off.count == 0)
        #expect(try off.recordAndBytes("u1", stored("{a}"), decode: decode).bytes == Array("{a}".utf8))

        // With the bytes (a compare-and-set stamp): the stored ones, and on a hit the kept array itself.
        let (first, firstBytes) = try cache.recordAndBytes("u5", stored("{c}"), decode: decode)
        let (again, againBytes) = try cache.recordAndBytes("u5", stored("{c}"), decode: decode)
        #expect(first == "{c}" && again == "{c}")
        #expect(firstBytes == Array("{c}".utf8) && againBytes == firstBytes)
        #expect(firstBytes.withUnsafeBytes { $0.baseAddress } == againBytes.withUnsafeBytes { $0.baseAddress }, "a hit copies nothing")
        #expect(try cache.recordAndBytes("u5", stored("{d}"), decode: decode).bytes == Array("{d}".utf8))
    }

    @Test("StoredRecordCache.seed: a read of the seeded bytes decodes nothing, a read of other bytes decodes them")
    func seededRecords() throws {
        let cache = StoredRecordCache<String, String>(capacity: 4)
        var decoded: [String] = []
        cache.seed("u1", bytes: Array("{a}".utf8), record: "seeded")
        #expect(
            cache.record("u1", ByteBuffer(string: "{a}")) {
                decoded.append(String(decoding: $0, as: UTF8.self)); return ""
            } == "seeded")
        #expect(decoded.isEmpty, "the seeded bytes are not decoded")
        #expect(
            cache.record("u1", ByteBuffer(string: "{b}")) {
                decoded.append(String(decoding: $0, as: UTF8.self)); return "b"
            } == "b")
        #expect(decoded == ["{b}"], "other bytes are")
        let none = StoredRecordCache<String, String>(capacity: 0)
        none.seed("u1", bytes: Array("{a}".utf8), record: "seeded")
        #expect(none.count == 0, "capacity 0 keeps nothing, seeded or read")
        cache.seed("big", bytes: Array(repeating: 32, count: StoredRecordCache<String, String>.largestCached + 1), record: "big")
        #expect(cache.count == 1, "a record over largestCached is not kept")
    }

    @Test("Redis: an account read through the record cache follows every change to the stored user and identities")
    func cachedAccountFollowsChanges() async throws {
        try await withTestStore(.redis) { store in
            let redis = try #require(store as? RedisAuthStore)
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            let user = UserRecord(
                id: UUIDBytes.random(), aud: "authenticated", role: "authenticated", email: nil, phone: nil, emailConfirmedAt: nil,
                appMetadata: [:], userMetadata: ["n": .integer(1)], isAnonymous: true, createdAt: now, updatedAt: now, lastSignInAt: now,
                bannedUntil: nil)
            guard case .committed = try await redis.commit(AccountChange(base: nil, user: user)) else {
                Issue.record("the first commit did not land")
                return
            }
            let first = try #require(try await redis.account(userID: user.id, sessionID: nil))
            #expect(try #require(try await redis.account(userID: user.id, sessionID: nil)).user == first.user)
            #expect(redis.decodedUsers.count == 1, "read twice, decoded and kept once")
            var banned = first.user
            banned.bannedUntil = now.addingTimeInterval(3600)
            guard case .committed = try await redis.commit(AccountChange(base: first.stamp, user: banned)) else {
                Issue.record("the ban did not land")
                return
            }
            let second = try #require(try await redis.account(userID: user.id, sessionID: nil))
            #expect(second.user.isBanned(at: now), "the changed record is read, not the kept one")
            #expect(second.stamp != first.stamp)
            var identity = IdentityRecord(
                identityID: UUIDBytes.random(), userID: user.id, provider: "apple", subject: "s1", identityData: ["v": .integer(1)], email: nil,
                createdAt: now, updatedAt: now, lastSignInAt: now)
            var linked = AccountChange(base: second.stamp, user: second.user)
            linked.savedIdentities = [identity]
            linked.claimedIdentities = [IdentityKey(provider: "apple", subject: "s1")]
            guard case .committed = try await redis.commit(linked) else {
                Issue.record("the link did not land")
                return
            }
            #expect(try await redis.account(userID: user.id, sessionID: nil)?.identities.map(\.identityData) == [["v": .integer(1)]])
            identity.identityData = ["v": .integer(2)]
            #expect(try await redis.updateIdentity(identity))
            #expect(
                try await redis.account(userID: user.id, sessionID: nil)?.identities.map(\.identityData) == [["v": .integer(2)]],
                "a changed identity is read, not the kept one")
        }
    }

    @Test("Redis: records kept at write time are what a read without the cache decodes, so the first read after a write decodes nothing")
    func seededRecordsEqualDecodedOnes() async throws {
        try await withTestStore(.redis) { store in
            let redis = try #require(store as? RedisAuthStore)
            let uncached = RedisAuthStore(redis: redis.redis, keyPrefix: redis.keyPrefix, recordCacheSize: 0)
            // Dates finer than the milliseconds stored, and metadata of every JSON kind.
            let now = Date(timeIntervalSince1970: 1_790_000_000.123_456_7)
            let metadata: [String: JSONValue] = [
                "name": .string("Zoë \"Q\" \u{1}"), "n": .integer(-7), "x": .double(0.1), "big": .double(1e300), "none": .null,
                "flags": .array([true, false, .object(["k": .string("v")])])
            ]
            let user = UserRecord(
                id: UUIDBytes.random(), aud: "authenticated", role: "authenticated", email: "a@example.com", phone: nil,
                emailConfirmedAt: now.addingTimeInterval(0.0004), appMetadata: ["provider": "apple", "providers": .array(["apple"])],
                userMetadata: metadata, isAnonymous: false, createdAt: now, updatedAt: now.addingTimeInterval(0.0006), lastSignInAt: now,
                bannedUntil: nil)
            let identity = IdentityRecord(
                identityID: UUIDBytes.random(), userID: user.id, provider: "apple", subject: "s1", identityData: metadata,
                email: "a@example.com", createdAt: now, updatedAt: now, lastSignInAt: now.addingTimeInterval(0.0009))
            let session = SessionRecord(
                id: UUIDBytes.random(), userID: user.id, createdAt: now, refreshedAt: now.addingTimeInterval(0.0002), aal: "aal1",
                amr: [.init(method: "oauth", timestamp: 1_790_000_000)], device: SessionDevice(userAgent: "test/1", ip: "192.0.2.1"))
            var change = AccountChange(base: nil, user: user)
            change.savedIdentities = [identity]
            change.claimedIdentities = [IdentityKey(provider: "apple", subject: "s1")]
            change.newSession = (session, String(repeating: "ab", count: 32))
            guard case .committed = try await redis.commit(change) else {
                Issue.record("the sign-in's commit did not land")
                return
            }
            #expect(redis.decodedUsers.count == 1 && redis.decodedIdentities.count == 1 && redis.decodedSessions.count == 1)
            let seeded = try #require(try await redis.account(userID: user.id, sessionID: session.id))
            let decoded = try #require(try await uncached.account(userID: user.id, sessionID: session.id))
            #expect(seeded.user == decoded.user)
            #expect(seeded.identities == decoded.identities)
            #expect(seeded.session == decoded.session)
            #expect(seeded.stamp == decoded.stamp)

            // A returning sign-in's update: the kept records follow it.
            var returning = AccountChange(base: seeded.stamp, user: seeded.user)
            returning.user.lastSignInAt = now.addingTimeInterval(60.000_3)
            var signedIn = seeded.identities[0]
            signedIn.lastSignInAt = now.addingTimeInterval(60.000_7)
            returning.savedIdentities = [signedIn]
            guard case .committed = try await redis.commit(returning) else {
                Issue.record("the update did not land")
                return
            }
            let again = try #require(try await redis.account(userID: user.id, sessionID: session.id))
            let againDecoded = try #require(try await uncached.account(userID: user.id, sessionID: session.id))
            #expect(again.user == againDecoded.user && again.identities == againDecoded.identities && again.session == againDecoded.session)
            #expect(again.user.lastSignInAt != seeded.user.lastSignInAt)
        }
    }
}
