import Foundation
import NIOCore
import RedisBridge
import Testing

@testable import AuthGateCore

/// Reading the revocation stream's entries, which every replica's proxy acts on.
@Suite("Revocation feed entries")
struct RevocationFeedTests {
    /// The one entry of a stream reply holding `fields`.
    private func entry(_ fields: [(String, String)]) throws -> RedisStreamEntry {
        let pairs = fields.flatMap { [RESPValue.bulkString(ByteBuffer(string: $0.0)), .bulkString(ByteBuffer(string: $0.1))] }
        let reply = RESPValue.array([.array([.bulkString(ByteBuffer(string: "1700000000000-0")), .array(pairs)])])
        return try #require(try RedisStreamEntry.entries(from: reply).first)
    }

    @Test("an entry's time is whole milliseconds in years 0-9999: NaN, infinity, exponents and signs are not read as a time")
    func times() throws {
        let read = RevocationFeed.event(from: try entry([("kind", "user"), ("user", "u1"), ("at", "1700000000123")]))
        #expect(read?.userID == "u1" && read?.at == Date(timeIntervalSince1970: 1_700_000_000.123))
        for at in ["nan", "inf", "-inf", "1e15", "+1700000000123", "1700000000123.5", " 1700000000123", "253402300800000", ""] {
            #expect(RevocationFeed.event(from: try entry([("kind", "user"), ("user", "u1"), ("at", at)])) == nil, "\(at)")
        }
    }
}
