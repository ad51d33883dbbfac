import Foundation
// Pipelined SET/GET throughput of RedisBridge, for bench/redis/run.sh.
//
// Usage: RedisBench <redis-url> [requests] [concurrency] [pool-size]
// Prints one CSV line per test: "SET",<requests per second>
import Logging
import NIOCore
import NIOPosix
import RedisBridge

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2, let url = try? RedisURL(parsing: arguments[1]) else {
    print("usage: RedisBench <redis-url> [requests] [concurrency] [pool-size]")
    exit(2)
}
let requests = arguments.count > 2 ? Int(arguments[2]) ?? 200_000 : 200_000
let concurrency = arguments.count > 3 ? Int(arguments[3]) ?? 800 : 800
let poolSize = arguments.count > 4 ? Int(arguments[4]) ?? 1 : 1

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let client = RedisClient(configuration: .init(url: url, poolSize: poolSize), eventLoopGroup: group, logger: Logger(label: "bench"))
let value = RedisArgument.string(String(repeating: "x", count: 3))

/// Runs `requests` commands from `concurrency` workers and returns requests per second.
func measure(_ makeCommand: @escaping @Sendable (Int) -> RedisCommand) async throws -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        for worker in 0..<concurrency {
            tasks.addTask {
                var index = worker
                while index < requests {
                    _ = try await client.send(makeCommand(index))
                    index += concurrency
                }
            }
        }
        try await tasks.waitForAll()
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(requests) / seconds
}

_ = try await client.ping()
// Warm up connections and code paths.
_ = try await measure { RedisCommand("SET", .string("bench:key:\($0 % 1000)"), value) }
let set = try await measure { RedisCommand("SET", .string("bench:key:\($0 % 100_000)"), value) }
let get = try await measure { RedisCommand("GET", .string("bench:key:\($0 % 100_000)")) }
print("\"SET\",\"\(String(format: "%.2f", set))\"")
print("\"GET\",\"\(String(format: "%.2f", get))\"")
await client.shutdown()
try await group.shutdownGracefully()
