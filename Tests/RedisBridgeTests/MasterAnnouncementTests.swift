import AuthGateTestSupport
import Logging
import NIOCore
import Testing

@testable import RedisBridge

/// What a slot does with an announcement that comes while its connection attempt is under way.
@Suite("Master announcements during a connection attempt", .serialized, .timeLimit(.minutes(2)))
struct MasterAnnouncementTests {
    @Test("an attempt that fails after a master was announced leaves no backoff: the next call reaches the announced master")
    func attemptInFlight() async throws {
        try await withRedisServer { server in
            // The only Sentinel is a port where connects hang: the attempt fails after 1 s.
            let sentinel = try FullBacklogListener()
            let client = RedisClient(
                configuration: .init(
                    url: RedisURL(host: "127.0.0.1", port: 1), poolSize: 1, connectTimeout: .seconds(1),
                    minReconnectBackoff: .seconds(30), maxReconnectBackoff: .seconds(30),
                    sentinel: RedisSentinelConfiguration(masterName: "m", nodes: [.init(host: "127.0.0.1", port: sentinel.port)])),
                logger: Logger(label: "announcement-test"))
            let first = Task { try await client.send(RedisCommand("PING")) }
            try await waitUntil("the attempt is under way", deadline: .seconds(5)) { client.isConnecting }
            client.masterSwitched(
                RedisMasterSwitch(
                    masterName: "m", previous: RedisServerAddress(host: "127.0.0.1", port: 1),
                    current: RedisServerAddress(host: "127.0.0.1", port: server.port)))
            await #expect(throws: RedisError.self) { try await first.value }
            // Without the announcement the slot would now refuse calls for 30 s (`unavailable`).
            let reply = try await client.send(RedisCommand("PING"))
            #expect(reply.string == "PONG")
            await client.shutdown()
            _ = sentinel
        }
    }
}
