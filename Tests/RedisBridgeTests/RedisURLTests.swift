import RedisBridge
import Testing

@Suite("Redis URLs")
struct RedisURLTests {
    @Test("rediss:// means TLS and prints back as rediss://; other schemes are refused")
    func schemes() throws {
        let secure = try RedisURL(parsing: "rediss://app:pw@cache.internal:6380/2")
        #expect(secure.tls && secure.host == "cache.internal" && secure.port == 6380 && secure.database == 2)
        #expect(secure.description == "rediss://app:***@cache.internal:6380/2")
        #expect(try RedisURL(parsing: secure.description.replacing("***", with: "pw")) == secure)
        let plain = try RedisURL(parsing: "REDIS://127.0.0.1")
        #expect(!plain.tls && plain.description == "redis://127.0.0.1:6379/0")
        for text in ["http://127.0.0.1:6379", "redisss://127.0.0.1", "tls://127.0.0.1"] {
            #expect(throws: RedisError.self, "\(text)") { try RedisURL(parsing: text) }
        }
    }

    @Test("IP literals are never sent as a TLS server name")
    func ipLiterals() {
        for host in ["127.0.0.1", "10.0.0.7", "::1", "fe80::1"] { #expect(TLSClientConfiguration.isIPAddress(host), "\(host)") }
        for host in ["localhost", "redis.internal", "1.example", ""] { #expect(!TLSClientConfiguration.isIPAddress(host), "\(host)") }
    }
}
