import AuthGateTestSupport
import Dispatch
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import RedisBridge

/// Against a real `redis-server`: the shared one from `make test`, or one started for the test.
@Suite("RedisClient against redis-server", .timeLimit(.minutes(3)))
struct RedisClientIntegrationTests {
    private let logger = Logger(label: "redis-test")

    private func withClient(
        url: RedisURL? = nil,
        poolSize: Int = 1,
        commandTimeout: TimeAmount = .seconds(2),
        _ body: (RedisClient) async throws -> Void
    ) async throws {
        let resolved: RedisURL
        if let url { resolved = url } else { resolved = try await SharedRedis.url() }
        let client = RedisClient(configuration: .init(url: resolved, poolSize: poolSize, commandTimeout: commandTimeout), logger: logger)
        do {
            try await body(client)
            await client.shutdown()
        } catch {
            await client.shutdown()
            throw error
        }
    }

    private func uniqueKey(_ name: String) -> String { "test:\(name):\(UInt64.random(in: 0...UInt64.max))" }

    /// The connection named `name` as `CLIENT LIST` on `check` shows it (the suite's tests share the server).
    private static func clientLine(named name: String, on check: RedisClient) async throws -> Substring? {
        let clients = try await check.send(RedisCommand("CLIENT", .string("LIST"))).string ?? ""
        return clients.split(separator: "\n").first { $0.contains("name=\(name) ") }
    }

    /// Bytes written after the BLPOP that blocks the connection named `name` on the server and not
    /// yet read by it (its `qbuf`); nil while it is not blocked on a BLPOP.
    private static func bytesQueuedBehindBLPOP(named name: String, on check: RedisClient) async throws -> Int? {
        guard let line = try await clientLine(named: name, on: check), line.contains("cmd=blpop"),
            let field = line.split(separator: " ").first(where: { $0.hasPrefix("qbuf=") })
        else { return nil }
        return Int(field.dropFirst(5))
    }

    /// The size of `INCR key` on the wire.
    private static func incrBytes(_ key: String) -> Int { "*2\r\n$4\r\nINCR\r\n$\(key.utf8.count)\r\n\(key)\r\n".utf8.count }

    @Test("SET, GET, DEL and an error reply")
    func basics() async throws {
        try await withClient { (redis: RedisClient) async throws in
            let key = uniqueKey("basics")
            #expect(try await redis.ping())
            #expect(try await redis.set(key, to: "v1", expiresIn: .seconds(30)))
            #expect(try await redis.set(key, to: "v2", onlyIfAbsent: true) == false)
            #expect(try await redis.get(key) == "v1")
            await #expect {
                try await redis.send(RedisCommand("INCR", .string(key)))
            } throws: { error in
                let error = error as? RedisError
                return error?.code == .serverError && error?.message.hasPrefix("ERR value is not an integer") == true
            }
            #expect(try await redis.delete(key) == 1)
            #expect(try await redis.get(key) == nil)
        }
    }

    @Test("1,000 concurrent commands on one connection are all answered correctly")
    func thousandConcurrent() async throws {
        try await withClient(poolSize: 1) { (redis: RedisClient) async throws in
            let prefix = uniqueKey("concurrent")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        let key = "\(prefix):\(index)"
                        try await redis.set(key, to: .string("value-\(index)"), expiresIn: .seconds(60))
                        let value = try await redis.get(key)
                        #expect(value == "value-\(index)")
                        let echoed = try await redis.send(RedisCommand("ECHO", .string("echo-\(index)")))
                        #expect(echoed.string == "echo-\(index)")
                    }
                }
                try await group.waitForAll()
            }
            let clients = try await redis.send(RedisCommand("CLIENT", "LIST", "TYPE", "normal")).string ?? ""
            #expect(clients.split(separator: "\n").filter { $0.contains("name=authgate") }.count >= 1)
        }
    }

    @Test("handshake: SELECT and CLIENT SETNAME from the URL")
    func handshake() async throws {
        var url = try await SharedRedis.url()
        url.database = 3
        try await withClient(url: url) { (redis: RedisClient) async throws in
            let key = uniqueKey("db3")
            try await redis.set(key, to: "in-three", expiresIn: .seconds(30))
            let connection = try await redis.connection()
            #expect(try await connection.send(RedisCommand("CLIENT", "GETNAME")).string == "authgate")
            #expect(try await connection.send(RedisCommand("SELECT", 0)).string == "OK")
            #expect(try await connection.send(RedisCommand("EXISTS", .string(key))).int == 0)
            #expect(try await connection.send(RedisCommand("SELECT", 3)).string == "OK")
            #expect(try await connection.send(RedisCommand("EXISTS", .string(key))).int == 1)
        }
    }

    @Test("AUTH with a password from the URL; a wrong password is a clear connection error")
    func auth() async throws {
        try await withRedisServer { server in
            try await withClient(url: server.url) { (redis: RedisClient) async throws in
                try await redis.send(RedisCommand("CONFIG", "SET", "requirepass", "s3cr%t"))
            }
            var good = server.url
            good.password = "s3cr%t"
            let parsed = try RedisURL(parsing: "redis://:s3cr%25t@127.0.0.1:\(server.port)/0")
            #expect(parsed == good)
            try await withClient(url: parsed) { (redis: RedisClient) async throws in #expect(try await redis.ping()) }
            var bad = server.url
            bad.password = "wrong"
            try await withClient(url: bad) { (redis: RedisClient) async throws in
                await #expect {
                    try await redis.ping()
                } throws: { error in
                    let error = error as? RedisError
                    return error?.code == .connectionFailed && error?.message.contains("refused the handshake") == true
                        && error?.description.contains("wrong") == false
                }
            }
        }
    }

    @Test(
        "a user named without a password signs in with an empty one: a `nopass` user is that user, any other a refused handshake, never the default user"
    )
    func userWithoutPassword() async throws {
        try await withRedisServer { server in
            try await withClient(url: server.url) { (redis: RedisClient) async throws in
                try await redis.send(RedisCommand("ACL", "SETUSER", "open", "on", "nopass", "~*", "+@all"))
                try await redis.send(RedisCommand("ACL", "SETUSER", "closed", "on", ">s3cret", "~*", "+@all"))
            }
            var open = server.url
            open.username = "open"
            try await withClient(url: open) { (redis: RedisClient) async throws in
                #expect(try await redis.send(RedisCommand("ACL", "WHOAMI")).string == "open")
            }
            var closed = server.url
            closed.username = "closed"
            try await withClient(url: closed) { (redis: RedisClient) async throws in
                await #expect {
                    try await redis.ping()
                } throws: { error in
                    let error = error as? RedisError
                    return error?.code == .connectionFailed && error?.message.contains("refused the handshake") == true
                }
            }
        }
    }

    @Test("EVALSHA answered NOSCRIPT sends the script whole (EVAL, one more round trip), which caches it for the next EVALSHA")
    func scripts() async throws {
        // A Redis of its own: SCRIPT FLUSH on the shared one once made another suite's script
        // fail between its SCRIPT LOAD and its EVALSHA.
        try await withRedisServer { server in
            try await withClient(url: server.url) { (redis: RedisClient) async throws in
                let script = RedisScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
                let key = uniqueKey("script")
                try await redis.send(RedisCommand("SCRIPT", "FLUSH"))
                let before = redis.roundTrips
                #expect(try await redis.evaluate(script, keys: [key], arguments: [5]).int == 5)
                #expect(redis.roundTrips - before == 2, "EVALSHA, then EVAL")
                #expect(try await redis.evaluate(script, keys: [key], arguments: [2]).int == 7)
                #expect(redis.roundTrips - before == 3, "cached by the EVAL: EVALSHA alone")
                let exists = try await redis.send(RedisCommand("SCRIPT", "EXISTS", .string(script.sha1)))
                #expect(exists.array == [.integer(1)])
                _ = try await redis.delete(key)
            }
        }
    }

    @Test("a script flushed again and again by another client still runs every time (EVAL with the source)")
    func scriptFlushedMeanwhile() async throws {
        try await withRedisServer { server in
            try await withClient(url: server.url, poolSize: 2) { (redis: RedisClient) async throws in
                let key = uniqueKey("flushed")
                // Another task flushes the script cache all the time, as a concurrent SCRIPT FLUSH or
                // a failover would: EVALSHA keeps finding it gone, and EVAL runs it anyway.
                let script = RedisScript("redis.call('INCRBY', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])")
                try await redis.send(RedisCommand("SCRIPT", "FLUSH"))
                let flusher = Task {
                    for _ in 0..<2000 {
                        _ = try? await redis.send(RedisCommand("SCRIPT", "FLUSH"))
                    }
                }
                for round in 1...200 {
                    #expect(try await redis.evaluate(script, keys: [key], arguments: [1]).int == Int64(round))
                }
                flusher.cancel()
                _ = await flusher.result
                _ = try await redis.delete(key)
            }
        }
    }

    @Test("a command past its deadline fails fast with timeout, and the client recovers")
    func commandDeadline() async throws {
        try await withClient(commandTimeout: .milliseconds(200)) { (redis: RedisClient) async throws in
            // The pings around it are given time of their own: what is tested is the deadline of
            // the command between them and that the client recovers, not that a ping is answered
            // within 200 ms beside the whole suite on two cores (once, in a full run, it was not).
            func ping() async throws -> Bool { try await redis.send(RedisCommand("PING"), timeout: .seconds(10)).string == "PONG" }
            // Connected first, so that the time measured is the deadline's and not the connect's.
            #expect(try await ping())
            let clock = ContinuousClock()
            let start = clock.now
            await #expect {
                try await redis.send(RedisCommand("BLPOP", .string(uniqueKey("never")), 5))
            } throws: { ($0 as? RedisError)?.code == .timeout }
            // Fast means long before BLPOP's own 5 s would have answered; on a loaded two-core
            // machine the deadline's timer may run late, so the bound is not the 200 ms itself.
            #expect(clock.now - start < .seconds(4))
            #expect(try await ping())
        }
    }

    @Test("a fresh client's first commands, sent all at once, share one connect and are all answered")
    func concurrentFirstUse() async throws {
        let url = try await SharedRedis.url()
        let redis = RedisClient(configuration: .init(url: url, poolSize: 1), logger: logger)
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 { group.addTask { try await redis.ping() } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answered == 200)
        await redis.shutdown()
    }

    @Test("graceful shutdown answers in-flight commands, then refuses new ones")
    func gracefulShutdown() async throws {
        let url = try await SharedRedis.url()
        let name = "drain-\(UInt32.random(in: 0...UInt32.max))"
        let redis = RedisClient(configuration: .init(url: url, poolSize: 1, clientName: name), logger: logger)
        let check = RedisClient(configuration: .init(url: url, poolSize: 1), logger: logger)
        let key = uniqueKey("drain")
        let list = uniqueKey("drain-list")
        _ = try await check.delete(key, list)
        // A BLPOP holds the one connection; 200 INCRs are pipelined behind it. All of them are
        // in flight, unanswered, when shutdown() starts.
        let blocked = Task { try await redis.send(RedisCommand("BLPOP", .string(list), .string("10")), timeout: .seconds(15)) }
        // The BLPOP first, alone: nothing orders two tasks' sends, so the INCRs start only once it blocks.
        try await waitUntil("the BLPOP blocks on the server") { try await Self.bytesQueuedBehindBLPOP(named: name, on: check) != nil }
        let queued = Task {
            try await withThrowingTaskGroup(of: RESPValue.self) { group in
                for _ in 0..<200 { group.addTask { try await redis.send(RedisCommand("INCR", .string(key)), timeout: .seconds(15)) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        // Every INCR has reached the server: the blocked client's query buffer holds all 200.
        let incrBytes = Self.incrBytes(key)
        try await waitUntil("the BLPOP is blocked with 200 INCRs (\(incrBytes) bytes each) queued behind it") {
            guard let queuedBytes = try await Self.bytesQueuedBehindBLPOP(named: name, on: check) else { return false }
            return queuedBytes >= 200 * incrBytes
        }
        #expect(try await check.get(key) == nil, "the INCRs wait behind the BLPOP")
        let shutdown = Task { await redis.shutdown() }
        _ = try await check.send(RedisCommand("LPUSH", .string(list), .string("go")))
        let popped = try await blocked.value
        #expect(popped.array?.last?.string == "go")
        let answered = try await queued.value
        await shutdown.value
        await #expect { try await redis.ping() } throws: { ($0 as? RedisError)?.code == .shutdown }
        #expect(answered.count == 200)
        #expect(Set(answered.compactMap(\.int)) == Set(1...200))
        #expect(try await check.get(key) == "200")
        _ = try await check.delete(key, list)
        await check.shutdown()
    }

    @Test("callers on the connection's own event loop get their first 16 commands written at once, before the loop's batch task, in order")
    func eagerPartOnTheEventLoop() async throws {
        let url = try await SharedRedis.url()
        let name = "eager-\(UInt32.random(in: 0...UInt32.max))"
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let connection = try await RedisConnection.connect(
            to: url, configuration: RedisClientConfiguration(url: url, clientName: name), eventLoop: loop, logger: logger)
        let check = RedisClient(configuration: .init(url: url, poolSize: 1), logger: logger)
        let key = uniqueKey("eager")
        let list = uniqueKey("eager-list")
        // A BLPOP holds the connection on the server: what is written after it stays in its query buffer.
        let blocked = Task { try await connection.send(RedisCommand("BLPOP", .string(list), .string("10")), timeout: .seconds(15)) }
        try await waitUntil("the BLPOP blocks on the server") { try await Self.bytesQueuedBehindBLPOP(named: name, on: check) != nil }
        let size = RedisOutbox<RedisRequest>.eagerBatchSize
        let incrBytes = Self.incrBytes(key)
        // On the loop: `size` tasks each send an INCR, then one more task holds the loop (before the
        // batch task the first INCR scheduled) until the server has all of them, or 10 s pass.
        let onLoop = EventLoopActor(loop: loop)
        let (incrs, reachedServerWhileHeld) = await onLoop.sendThenHold(count: size, command: RedisCommand("INCR", .string(key)), on: connection) {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                guard let queued = try? await Self.bytesQueuedBehindBLPOP(named: name, on: check) else { return false }
                if queued >= size * incrBytes { return true }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return false
        }
        #expect(reachedServerWhileHeld, "the \(size) INCRs were written while the loop was still busy, before its batch task")
        _ = try await check.send(RedisCommand("LPUSH", .string(list), .string("go")))
        #expect(try await blocked.value.array?.last?.string == "go")
        var replies: [Int64] = []
        for incr in incrs { replies.append(try await incr.value.int ?? -1) }
        #expect(replies == Array(1...Int64(size)), "each caller got its own reply, in the order sent")
        _ = try await check.delete(key, list)
        connection.closeNow()
        await check.shutdown()
        try await group.shutdownGracefully()
    }
}

/// An actor whose jobs run on one event loop: its tasks are callers on that loop.
private actor EventLoopActor {
    let loop: any EventLoop
    /// Counted by each sending task: a task that touches the actor's state is isolated to it, so it
    /// runs on the loop.
    private var started = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }

    init(loop: any EventLoop) { self.loop = loop }

    /// Starts `count` tasks on the loop that each send `command` on `connection`, then one that holds
    /// the loop (blocking it) until `reached`, run elsewhere, returns; the tasks and its answer.
    func sendThenHold(
        count: Int, command: RedisCommand, on connection: RedisConnection, until reached: @escaping @Sendable () async -> Bool
    ) async -> ([Task<RESPValue, any Error>], Bool) {
        var tasks: [Task<RESPValue, any Error>] = []
        for _ in 0..<count {
            tasks.append(
                Task {
                    self.started += 1
                    return try await connection.send(command, timeout: .seconds(15))
                })
        }
        let held = Task { () -> Bool in
            self.loop.preconditionInEventLoop()
            let answer = Mutex<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                let value = await reached()
                answer.withLock { $0 = value }
                done.signal()
            }
            done.wait()
            return answer.withLock { $0 } ?? false
        }
        return (tasks, await held.value)
    }
}
