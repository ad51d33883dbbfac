public import AuthGateCore
public import Hummingbird
public import Logging
public import NIOCore
public import ServiceLifecycle

/// Builds the Hummingbird application that serves AuthGate: health and readiness now; the GoTrue
/// API, the admin API and the edge proxy as they land.
public enum GatewayApplication {
    /// The version `/health` reports.
    public static let version = "0.1.0"

    /// Everything the application needs, built once at start.
    public struct Dependencies: Sendable {
        public let configuration: AuthGateConfiguration
        public let store: any AuthStore
        public let keyRing: SigningKeyRing?

        public init(configuration: AuthGateConfiguration, store: any AuthStore, keyRing: SigningKeyRing?) {
            self.configuration = configuration
            self.store = store
            self.keyRing = keyRing
        }
    }

    /// The router with every route and middleware.
    public static func buildRouter(_ dependencies: Dependencies) -> Router<AuthGateRequestContext> {
        let router = Router(context: AuthGateRequestContext.self)
        router.add(middleware: RequestLogMiddleware())
        HealthController(version: version, probe: ReadinessProbe(store: dependencies.store, keyRing: dependencies.keyRing))
            .register(on: router)
        return router
    }

    /// The application, ready to run in a `ServiceGroup` (or on its own with `runService()`).
    /// - Parameters:
    ///   - services: long-lived services that must run beside the server (the Redis client);
    ///     they start before it and stop after it.
    ///   - onServerRunning: called with the listening channel (tests read the port from it).
    public static func build(
        _ dependencies: Dependencies,
        services: [any Service] = [],
        logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let server = dependencies.configuration.server
        return Application(
            router: buildRouter(dependencies),
            configuration: .init(address: .hostname(server.host, port: server.port), serverName: nil),
            services: services,
            onServerRunning: onServerRunning,
            logger: logger
        )
    }
}
