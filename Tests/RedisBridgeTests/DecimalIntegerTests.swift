import NIOCore
import RedisBridge
import Testing

/// Numbers written by someone else (a URL, a Sentinel, a Redis reply) are read in one spelling.
@Suite("Decimal numbers from outside")
struct DecimalIntegerTests {
    @Test("digits only, a minus sign only where the range has negative numbers, within the range, no trap at any length")
    func parse() {
        #expect(DecimalInteger.parse("6379", in: 1...65535) == 6379)
        #expect(DecimalInteger.parse("007", in: 0...10) == 7)
        #expect(DecimalInteger.parse("-42", in: -100...100) == -42)
        #expect(DecimalInteger.parse("9223372036854775807", in: Int64.min...Int64.max) == Int64.max)
        #expect(DecimalInteger.parse("-9223372036854775808", in: Int64.min...Int64.max) == Int64.min)
        let refused = [
            "", "+5", "-5", "-", "+", " 5", "5 ", "5\n", "1_000", "0x10", "1e3", "5.0", "٥", "５", "9223372036854775808",
            String(repeating: "9", count: 10_000), "65536", "0"
        ]
        for text in refused {
            #expect(DecimalInteger.parse(text, in: 1...65535) == nil, "\(text.debugDescription)")
        }
        #expect(DecimalInteger.parse("-9223372036854775809", in: Int64.min...Int64.max) == nil)
        #expect(DecimalInteger.parse("--5", in: -10...10) == nil && DecimalInteger.parse("-+5", in: -10...10) == nil)
    }

    @Test("a Redis URL's port and database, a Sentinel's port, an integer in a bulk string and a stream id's time: no sign")
    func redisNumbers() throws {
        #expect(try RedisURL(parsing: "redis://cache:6380/2").port == 6380)
        for text in ["redis://cache:+6380/2", "redis://cache:6380/+2", "redis://cache:6380/-0", "redis://cache: 6380", "redis://[::1]:+6380"] {
            #expect(throws: RedisError.self, "\(text)") { try RedisURL(parsing: text) }
        }
        #expect(RedisMasterSwitch(payload: "main 10.0.0.1 6379 10.0.0.2 6380")?.current.port == 6380)
        #expect(RedisMasterSwitch(payload: "main 10.0.0.1 6379 10.0.0.2 +6380") == nil)
        #expect(RESPValue.bulkString(ByteBuffer(string: "-17")).int == -17)
        for text in ["+17", " 17", "17 ", "1e3", "0x11"] {
            #expect(RESPValue.bulkString(ByteBuffer(string: text)).int == nil, "\(text)")
        }
        #expect(RedisStreamEntry(id: "1700000000000-0", fields: []).timestampMilliseconds == 1_700_000_000_000)
        #expect(RedisStreamEntry(id: "+1700000000000-0", fields: []).timestampMilliseconds == nil)
    }
}
