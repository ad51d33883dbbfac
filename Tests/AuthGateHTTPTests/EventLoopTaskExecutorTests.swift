import NIOCore
import NIOPosix
import Testing

@testable import AuthGateHTTP

/// The connection's tasks run on the connection's loop: at their start, after a resumption from
/// another loop, after a nonisolated async call and after an actor's method.
@Suite("Event loop task executor")
struct EventLoopTaskExecutorTests {
    /// An actor of its own (default) executor: calling it leaves the loop, returning comes back.
    actor Counter {
        var count = 0
        func increment() -> Int {
            count += 1
            return count
        }
    }

    /// A nonisolated async function: runs on the caller's task executor.
    static func onLoop(_ loop: any EventLoop) async -> Bool {
        loop.inEventLoop
    }

    @Test("a task preferring the executor runs every part on its loop")
    func runsOnItsLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let executor = EventLoopTaskExecutor(eventLoop: loops[0])
        let counter = Counter()
        let observed = try await Task(executorPreference: executor) { () async throws -> [Bool] in
            var observed = [loops[0].inEventLoop]
            // Completed on the other loop: the continuation is resumed from there.
            let value = try await loops[1].submit { loops[1].inEventLoop }.get()
            observed.append(value)
            observed.append(loops[0].inEventLoop)
            observed.append(await Self.onLoop(loops[0]))
            let count = await counter.increment()
            observed.append(count == 1 && loops[0].inEventLoop)
            return observed
        }.value
        #expect(observed == [true, true, true, true, true])
        try await group.shutdownGracefully()
    }

    @Test("many tasks on one executor all finish, each on the loop")
    func manyTasks() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let executor = EventLoopTaskExecutor(eventLoop: loops[0])
        let results = await withTaskGroup(of: Bool.self) { tasks in
            for index in 0..<200 {
                tasks.addTask(executorPreference: executor) {
                    let other = loops[index % 2]
                    let resumed = (try? await other.submit { index }.get()) == index
                    return resumed && loops[0].inEventLoop
                }
            }
            var results: [Bool] = []
            for await result in tasks { results.append(result) }
            return results
        }
        #expect(results.count == 200)
        #expect(results.allSatisfy { $0 })
        try await group.shutdownGracefully()
    }
}
