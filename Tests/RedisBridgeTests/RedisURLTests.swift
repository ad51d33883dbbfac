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

    @Test("an ACL user without a password in the URL prints with its colon and reads back as a user, never as a password")
    func userWithoutPassword() throws {
        let user = try RedisURL(parsing: "redis://authgate:@cache:6379/0")
        #expect(user.username == "authgate" && user.password == nil)
        #expect(user.description == "redis://authgate:@cache:6379/0")
        #expect(try RedisURL(parsing: user.description) == user)
        // The password-only shorthand stays a password.
        let shorthand = try RedisURL(parsing: "redis://secret@cache")
        #expect(shorthand.username == nil && shorthand.password == "secret")
        #expect(shorthand.description == "redis://:***@cache:6379/0")
        // Any user name prints so that it reads back the same.
        for name in ["a:b", "a@b", "é/%", "white space"] {
            let url = RedisURL(host: "cache", username: name)
            #expect(try RedisURL(parsing: url.description) == url, "\(name): \(url.description)")
        }
    }

    @Test("IP literals are never sent as a TLS server name")
    func ipLiterals() {
        for host in ["127.0.0.1", "10.0.0.7", "::1", "fe80::1"] { #expect(TLSClientConfiguration.isIPAddress(host), "\(host)") }
        for host in ["localhost", "redis.internal", "1.example", ""] { #expect(!TLSClientConfiguration.isIPAddress(host), "\(host)") }
    }
}
