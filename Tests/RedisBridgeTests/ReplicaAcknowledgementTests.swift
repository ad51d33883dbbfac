import AuthGateTestSupport
import Logging
import NIOCore
import RedisBridge
import Testing

/// Scripts followed by `WAIT` against a real master and replica.
@Suite("Replica-acknowledged writes", .serialized, .timeLimit(.minutes(3)))
struct ReplicaAcknowledgementTests {
    @Test(
        "a script with WAIT returns once the replica has its write; a paused replica makes it replication_timeout after the timeout, the write done on the master; NOSCRIPT is one EVAL"
    )
    func acknowledged() async throws {
        let master = try await RedisServerProcess.start()
        let replica = try await RedisServerProcess.start(extraArguments: ["--replicaof", "127.0.0.1", String(master.port)])
        let client = RedisClient(configuration: .init(url: master.url, poolSize: 1), logger: Logger(label: "wait-test"))
        do {
            try await waitUntil("the replica is in sync", deadline: .seconds(20)) {
                try await SentinelCluster.info(replica.port, "replication").contains("master_link_status:up")
            }
            let script = RedisScript("redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])")
            // Generous where the replica is up (a loaded CI machine may take a while to answer),
            // short where it is paused.
            let acknowledgement = RedisReplicaAcknowledgement(replicas: 1, timeout: .seconds(10))
            let short = RedisReplicaAcknowledgement(replicas: 1, timeout: .milliseconds(300))

            // The first call finds no script (NOSCRIPT) and sends it whole: two round trips, then one.
            let before = client.roundTrips
            #expect(try await client.evaluate(script, keys: ["ack:k"], arguments: ["v1"], acknowledgement: acknowledgement).string == "v1")
            #expect(client.roundTrips - before == 2)
            #expect(try await SentinelCluster.command(replica.port, RedisCommand("GET", "ack:k")).string == "v1", "acknowledged: on the replica")
            try await client.evaluate(script, keys: ["ack:k"], arguments: ["v2"], acknowledgement: acknowledgement)
            #expect(client.roundTrips - before == 3, "script and WAIT in one round trip")
            #expect(try await SentinelCluster.command(replica.port, RedisCommand("GET", "ack:k")).string == "v2")

            replica.pause()
            let clock = ContinuousClock()
            let start = clock.now
            await #expect {
                try await client.evaluate(script, keys: ["ack:k"], arguments: ["v3"], acknowledgement: short)
            } throws: { error in
                (error as? RedisError)?.code == .replicationTimeout
            }
            let waited = clock.now - start
            #expect(waited >= .milliseconds(300) && waited < .seconds(5), "waited \(waited)")
            #expect(try await client.send(RedisCommand("GET", "ack:k")).string == "v3", "the write was made on the master")
            replica.resume()
            try await client.evaluate(script, keys: ["ack:k"], arguments: ["v4"], acknowledgement: acknowledgement)
            #expect(try await SentinelCluster.command(replica.port, RedisCommand("GET", "ack:k")).string == "v4")
        } catch {
            replica.resume()
            await client.shutdown()
            await replica.stop()
            await master.stop()
            throw error
        }
        await client.shutdown()
        await replica.stop()
        await master.stop()
    }
}
