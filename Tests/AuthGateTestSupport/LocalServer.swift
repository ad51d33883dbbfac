import Hummingbird
import HummingbirdCore
import NIOCore

/// A Hummingbird server on a free loopback port, for tests.
struct LocalServer: Sendable {
    let port: Int
    private let task: Task<Void, any Error>

    /// Starts `router` (with `server`, for WebSocket upgrades).
    static func start(_ router: Router<BasicRequestContext>, server: HTTPServerBuilder = .http1()) async throws -> LocalServer {
        let (port, task) = try await startLocalServer(router, server: server)
        return LocalServer(port: port, task: task)
    }

    /// `http://127.0.0.1:<port>`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Stops serving and waits until it has.
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// Starts a Hummingbird router on a free loopback port for tests; returns the port and the task
/// running it (cancel the task to stop the server).
private func startLocalServer(_ router: Router<BasicRequestContext>, server: HTTPServerBuilder) async throws -> (
    port: Int, task: Task<Void, any Error>
) {
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
