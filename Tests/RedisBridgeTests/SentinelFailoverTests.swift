import AuthGateTestSupport
import Logging
import NIOCore
import RedisBridge
import ServiceLifecycle
import Testing

/// The client behind Sentinels: one master, one replica (both with the append-only file), three
/// Sentinels, all real processes on loopback.
@Suite("Sentinel failover", .serialized, .timeLimit(.minutes(10)))
struct SentinelFailoverTests {
    @Test("the client finds the master through the Sentinels, follows a failover when the master dies, and loses no acknowledged write")
    func failover() async throws {
        let cluster = try await SentinelCluster.start()
        let client = RedisClient(
            configuration: .init(
                url: RedisURL(host: "127.0.0.1", port: 1), poolSize: 2, maxReconnectBackoff: .milliseconds(200), sentinel: cluster.configuration),
            logger: Logger(label: "sentinel-test")
        )
        do {
            try await client.send(RedisCommand("SET", "before-failover", "kept"))
            try await client.send(RedisCommand("WAIT", 1, 1000))
            await cluster.master.kill()
            let clock = ContinuousClock()
            let killed = clock.now
            var recovered = false
            while !recovered, clock.now - killed < .seconds(30) {
                recovered = (try? await client.send(RedisCommand("SET", "after-failover", "written"))) != nil
                if !recovered { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(recovered, "the client never reached the new master")
            #expect(try await client.send(RedisCommand("GET", "before-failover")).string == "kept", "an acknowledged write survived the failover")
            #expect(try await SentinelCluster.info(cluster.replica.port, "replication").contains("role:master"), "the replica was promoted")
        } catch {
            await client.shutdown()
            await cluster.stop()
            throw error
        }
        await client.shutdown()
        await cluster.stop()
    }

    @Test("run as a service, the client follows the Sentinels' announcement at once instead of waiting out a 20 s backoff")
    func followsAnnouncement() async throws {
        let cluster = try await SentinelCluster.start()
        let client = RedisClient(
            configuration: .init(
                url: RedisURL(host: "127.0.0.1", port: 1), poolSize: 2, connectTimeout: .milliseconds(500),
                minReconnectBackoff: .seconds(20), maxReconnectBackoff: .seconds(20), sentinel: cluster.configuration),
            logger: Logger(label: "sentinel-test")
        )
        let group = ServiceGroup(services: [client], logger: Logger(label: "sentinel-test"))
        let running = Task { try await group.run() }
        do {
            try await client.send(RedisCommand("SET", "before-failover", "kept"))
            try await cluster.waitForReplication()
            let clock = ContinuousClock()
            await cluster.master.kill()
            let killed = clock.now
            // The first calls fail and start a 20 s backoff; only the announcement can end it early.
            var recovered = false
            while !recovered, clock.now - killed < .seconds(15) {
                recovered = (try? await client.send(RedisCommand("SET", "after-failover", "written"))) != nil
                if !recovered { try await Task.sleep(for: .milliseconds(50)) }
            }
            let window = clock.now - killed
            #expect(recovered, "the client did not follow the failover within 15 s")
            print("followed the failover after \(window)")
            #expect(try await client.send(RedisCommand("GET", "before-failover")).string == "kept")
        } catch {
            await group.triggerGracefulShutdown()
            _ = try? await running.value
            await cluster.stop()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
        await cluster.stop()
    }

    @Test("configuration errors: an unknown master name is a clear connection failure")
    func unknownMaster() async throws {
        let cluster = try await SentinelCluster.start()
        var configuration = cluster.configuration
        configuration.masterName = "nobody"
        let client = RedisClient(
            configuration: .init(url: RedisURL(host: "127.0.0.1", port: 1), poolSize: 1, sentinel: configuration),
            logger: Logger(label: "sentinel-test"))
        await #expect(throws: RedisError.self) { try await client.send(RedisCommand("PING")) }
        await client.shutdown()
        await cluster.stop()
    }
}
