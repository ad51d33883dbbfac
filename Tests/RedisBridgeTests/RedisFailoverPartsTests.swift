import NIOCore
import Testing

@testable import RedisBridge

#if canImport(Glibc)
    import Glibc
#endif

/// The pieces a failover leans on, without sockets: Sentinel's announcement, `WAIT`'s verdict,
/// the log throttle, connect errors in words.
@Suite("Redis failover parts", .timeLimit(.minutes(1)))
struct RedisFailoverPartsTests {
    @Test("+switch-master payloads: five fields with two ports in range, or nothing")
    func switchMaster() {
        let parsed = RedisMasterSwitch(payload: "authgate 10.0.0.7 6379 10.0.0.8 6380")
        #expect(parsed?.masterName == "authgate")
        #expect(parsed?.previous == RedisServerAddress(host: "10.0.0.7", port: 6379))
        #expect(parsed?.current == RedisServerAddress(host: "10.0.0.8", port: 6380))
        #expect(RedisMasterSwitch(payload: "authgate ::1 6379 ::2 6380")?.current.description == "[::2]:6380")
        for bad in [
            "", "authgate 10.0.0.7 6379 10.0.0.8", "authgate 10.0.0.7 6379 10.0.0.8 6380 extra", "authgate 10.0.0.7 6379 10.0.0.8 0",
            "authgate 10.0.0.7 6379 10.0.0.8 65536", "authgate 10.0.0.7 6379 10.0.0.8 +80", "authgate 10.0.0.7 6379 10.0.0.8 99999999999999999999",
            "authgate  6379 10.0.0.8 6380", " 10.0.0.7 6379 10.0.0.8 6380", "authgate 10.0.0.7 6379 10.0.0.8 6٣80"
        ] {
            #expect(RedisMasterSwitch(payload: bad) == nil, "\(bad)")
        }
        let message = RESPValue.array([
            .bulkString(ByteBuffer(string: "message")), .bulkString(ByteBuffer(string: "+switch-master")),
            .bulkString(ByteBuffer(string: "authgate 10.0.0.7 6379 10.0.0.8 6380"))
        ])
        #expect(RedisMasterSwitch(message: message) == parsed)
        let other = RESPValue.array([
            .bulkString(ByteBuffer(string: "message")), .bulkString(ByteBuffer(string: "+sdown")),
            .bulkString(ByteBuffer(string: "authgate 10.0.0.7 6379 10.0.0.8 6380"))
        ])
        #expect(RedisMasterSwitch(message: other) == nil)
    }

    /// The port went to `getaddrinfo` as text with `Int.init` alone: `70000` connected to 4464.
    @Test("a Sentinel's answer to get-master-addr-by-name: a host and a port 1-65535 in digits, or no master")
    func sentinelMasterAddress() {
        func reply(_ host: String, _ port: String) -> RESPValue {
            .array([.bulkString(ByteBuffer(string: host)), .bulkString(ByteBuffer(string: port))])
        }
        #expect(RedisSentinelLocator.masterAddress(in: reply("10.0.0.8", "6380")) == RedisServerAddress(host: "10.0.0.8", port: 6380))
        for port in ["70000", "65536", "0", "-1", "+6380", " 6380", "6380 ", "", "99999999999999999999", "6٣80"] {
            #expect(RedisSentinelLocator.masterAddress(in: reply("10.0.0.8", port)) == nil, "\(port)")
        }
        #expect(RedisSentinelLocator.masterAddress(in: reply("", "6380")) == nil)
        #expect(RedisSentinelLocator.masterAddress(in: .null) == nil)
        #expect(RedisSentinelLocator.masterAddress(in: .array([.bulkString(ByteBuffer(string: "10.0.0.8"))])) == nil)
    }

    @Test(
        "+promoted-slave names the promoted replica as the new master, +failover-state-wait-promotion the one about to be; other shapes are nothing")
    func promotedReplica() {
        let message = RESPValue.array([
            .bulkString(ByteBuffer(string: "message")), .bulkString(ByteBuffer(string: "+promoted-slave")),
            .bulkString(ByteBuffer(string: "slave 10.0.0.8:6380 10.0.0.8 6380 @ authgate 10.0.0.7 6379"))
        ])
        #expect(
            RedisMasterSwitch(message: message)
                == RedisMasterSwitch(
                    masterName: "authgate", previous: RedisServerAddress(host: "10.0.0.7", port: 6379),
                    current: RedisServerAddress(host: "10.0.0.8", port: 6380)))
        let promoting = RESPValue.array([
            .bulkString(ByteBuffer(string: "message")), .bulkString(ByteBuffer(string: "+failover-state-wait-promotion")),
            .bulkString(ByteBuffer(string: "slave 10.0.0.8:6380 10.0.0.8 6380 @ authgate 10.0.0.7 6379"))
        ])
        #expect(RedisMasterSwitch(message: promoting)?.isConfirmed == false, "a promotion under way is not yet a master")
        #expect(RedisMasterSwitch(message: promoting)?.current == RedisServerAddress(host: "10.0.0.8", port: 6380))
        #expect(RedisMasterSwitch(message: message)?.isConfirmed == true)
        for bad in [
            "master authgate 10.0.0.7 6379", "slave 10.0.0.8:6380 10.0.0.8 6380 authgate 10.0.0.7 6379",
            "slave 10.0.0.8:6380 10.0.0.8 0 @ authgate 10.0.0.7 6379", "slave 10.0.0.8:6380 10.0.0.8 6380 @ authgate 10.0.0.7"
        ] {
            #expect(RedisMasterSwitch(promotedReplica: bad) == nil, "\(bad)")
        }
    }

    @Test("WAIT: enough replicas pass; fewer are replication_timeout naming the count; an error reply or another shape fails")
    func waitVerdict() {
        let acknowledgement = RedisReplicaAcknowledgement(replicas: 2, timeout: .milliseconds(250))
        #expect(acknowledgement.command.name == "WAIT")
        #expect(throws: Never.self) { try acknowledgement.check(.integer(2)) }
        #expect(throws: Never.self) { try acknowledgement.check(.integer(3)) }
        #expect {
            try acknowledgement.check(.integer(1))
        } throws: { error in
            let error = error as? RedisError
            return error?.code == .replicationTimeout && error?.message == "1 of 2 replicas acknowledged the write within 250 ms"
        }
        #expect { try acknowledgement.check(.error("ERR WAIT cannot be used with replica instances")) } throws: {
            ($0 as? RedisError)?.code == .serverError
        }
        #expect { try acknowledgement.check(.simpleString("OK")) } throws: { ($0 as? RedisError)?.code == .unexpectedReply }
    }

    @Test("repeated log lines: the first passes, repeats inside the interval are held and counted, the next line reports them")
    func throttle() {
        let throttle = RepeatedLogThrottle(interval: .seconds(10))
        let start = ContinuousClock.now
        #expect(throttle.admit("a", now: start) == 0)
        for second in 1...9 { #expect(throttle.admit("a", now: start + .seconds(second)) == nil) }
        #expect(throttle.admit("b", now: start + .seconds(1)) == 0, "keys are counted apart")
        #expect(throttle.admit("a", now: start + .seconds(10)) == 9)
        #expect(throttle.admit("a", now: start + .seconds(25)) == 0)
    }

    @Test("connect errors in words, never NIO's type names")
    func connectErrors() {
        #expect(RedisConnectError.describe(IOError(errnoCode: ECONNREFUSED, reason: "connect")) == "connection refused")
        #expect(RedisConnectError.describe(ChannelError.connectTimeout(.milliseconds(500))) == "no answer within 500 ms")
        #expect(RedisConnectError.describe(errno: 9999) == "socket error 9999")
        let text = RedisChannelHandler.describe(socketError: IOError(errnoCode: ECONNRESET, reason: "read"))
        #expect(text == "socket error: connection reset")
    }

    @Test("timeouts and backoffs a caller chose never overflow: sums and doublings saturate, negative bounds count as none")
    func saturatingTimes() {
        #expect(TimeAmount.seconds(2).addingSaturated(.seconds(3)) == .seconds(5))
        #expect(TimeAmount.seconds(2).addingSaturated(.nanoseconds(.max)) == .nanoseconds(.max))
        #expect(TimeAmount.nanoseconds(.min).addingSaturated(.seconds(-1)) == .nanoseconds(.min))
        let url = RedisURL(host: "127.0.0.1")
        let usual = RedisClientConfiguration(url: url, minReconnectBackoff: .milliseconds(50), maxReconnectBackoff: .seconds(2))
        #expect((50_000_000...60_000_000).contains(usual.reconnectBackoff(afterFailures: 1).nanoseconds))
        #expect(usual.reconnectBackoff(afterFailures: 40) == .seconds(2), "capped, jitter included")
        for (low, high) in [
            (TimeAmount.nanoseconds(.max), TimeAmount.nanoseconds(.max)), (.hours(1_000_000), .nanoseconds(.max)), (.seconds(-1), .seconds(-5)),
            (.nanoseconds(.min), .nanoseconds(.max))
        ] {
            let configuration = RedisClientConfiguration(url: url, minReconnectBackoff: low, maxReconnectBackoff: high)
            for failures in [0, 1, 2, 21, 64, Int.max] {
                let backoff = configuration.reconnectBackoff(afterFailures: failures).nanoseconds
                #expect(backoff >= 0 && backoff <= max(0, high.nanoseconds), "\(low) \(high) after \(failures): \(backoff)")
            }
        }
    }
}
