public import AsyncHTTPClient
public import AuthGateCore
import NIOCore
public import ServiceLifecycle

/// The HTTP clients the proxy forwards with: one per distinct pair of connect and idle timeouts
/// among the routes (AsyncHTTPClient sets both per client), so each route gets its own.
///
/// Every client follows no redirects, never decompresses, keeps connections alive, and does not
/// retry a refused connection (a dead upstream answers 502 at once, and the proxy decides about
/// trying another). Runs as a service that shuts the clients down after the server stops.
public final class UpstreamClients: Service, Sendable {
    private let byRoute: [HTTPClient]
    private let distinct: [HTTPClient]

    public init(_ configuration: AuthGateConfiguration) {
        var made: [String: HTTPClient] = [:]
        var byRoute: [HTTPClient] = []
        for route in configuration.routes {
            let key = "\(route.connectTimeout.nanoseconds)/\(route.idleTimeout.nanoseconds)"
            if made[key] == nil { made[key] = Self.makeClient(route, maxConnections: configuration.proxy.maxConnectionsPerUpstream) }
            byRoute.append(made[key]!)
        }
        self.byRoute = byRoute
        self.distinct = Array(made.values)
    }

    /// The client for the route at `index` in `routes:`.
    public func client(forRoute index: Int) -> HTTPClient {
        byRoute[index]
    }

    private static func makeClient(_ route: RouteConfiguration, maxConnections: Int) -> HTTPClient {
        var settings = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(route.connectTimeout.nanoseconds), read: .nanoseconds(route.idleTimeout.nanoseconds)),
            decompression: .disabled
        )
        settings.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: maxConnections)
        settings.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Shuts every client down (also for tests that run the application without services).
    public func shutdown() async throws {
        for client in distinct { try await client.shutdown() }
    }
}
