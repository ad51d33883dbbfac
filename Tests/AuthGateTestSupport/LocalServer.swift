import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird server on a free loopback port, for tests.
struct LocalServer: Sendable {
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts `router` (with `server`, for WebSocket upgrades).
    static func start(_ router: Router<BasicRequestContext>, server: HTTPServerBuilder = .http1()) async throws -> LocalServer {
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            }
        )
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "local-test-server"))
        let task = Task { try await group.run() }
        var port = 0
        for await value in portStream {
            port = value
            break
        }
        guard port > 0 else {
            task.cancel()
            throw TestSupportError("a local test server did not start")
        }
        return LocalServer(port: port, group: group, task: task)
    }

    /// `http://127.0.0.1:<port>`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Stops serving and waits until it has: gracefully first, which closes the listening socket
    /// before anything else, then (for connections still open after 2 s, a WebSocket say) by
    /// cancelling. Cancelled at once, the server's accept loop dropped a connection it had just
    /// accepted, and NIO traps on a connection's writer dropped unfinished ("Deinited
    /// NIOAsyncWriter without calling finish()"): the whole test process crashed
    /// (/work/failed-s20-asyncwriter-crash.log).
    func stop() async {
        await group.triggerGracefulShutdown()
        let task = self.task
        await withTaskGroup(of: Void.self) { waiting in
            waiting.addTask { _ = try? await task.value }
            waiting.addTask { if (try? await Task.sleep(for: .seconds(2))) != nil { task.cancel() } }
            await waiting.next()
            waiting.cancelAll()
        }
    }
}
