import Hummingbird
import HummingbirdCore
import NIOCore

/// Starts a Hummingbird router on a free loopback port for tests; returns the port and the task
/// running it (cancel the task to stop the server).
func startLocalServer(_ router: Router<BasicRequestContext>, server: HTTPServerBuilder = .http1()) async throws -> (port: Int, task: Task<Void, any Error>) {
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
    let task = Task { try await app.runService(gracefulShutdownSignals: []) }
    var port = 0
    for await value in portStream {
        port = value
        break
    }
    guard port > 0 else {
        task.cancel()
        throw TestSupportError("a local test server did not start")
    }
    return (port, task)
}
