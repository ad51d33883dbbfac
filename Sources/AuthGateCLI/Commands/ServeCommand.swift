import ArgumentParser
import AuthGateCore
import AuthGateHTTP
import Foundation
import Logging
import Metrics
import OTel
import Prometheus
import ServiceLifecycle
import UnixSignals

/// `authgate serve`: runs the gateway until SIGTERM or SIGINT, then drains in-flight requests
/// (up to `server.shutdown_timeout`) and closes the store's connections.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the gateway.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        let configuration = try options.loadOrExit()
        let logWriter = LoggingBootstrap.bootstrap(configuration.logging)
        // Last out: every line logged until the gateway has stopped is written before exit.
        defer { logWriter.close() }
        let logger = Logger(label: "authgate")
        if configuration.isDevelopmentMode {
            printError(Self.developmentBanner)
            logger.warning("development mode: memory store (nothing persists across restarts) and a signing key generated at start")
        }
        // Every metric goes to one Prometheus registry, rendered at /metrics.
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
        let assembly: GatewayApplication.Assembly
        do {
            assembly = try GatewayApplication.assemble(configuration, metrics: metrics, logger: logger)
        } catch {
            logger.critical("cannot start", metadata: ["gw.error": "\(error)"])
            throw ExitStatus.configurationError
        }
        let descriptors = FileDescriptorLimit.needed(
            forConnections: configuration.server.maxConnections, tunnels: configuration.proxy.maxWebSocketTunnels)
        FileDescriptorLimit.raise(toAtLeast: descriptors, logger: logger)
        var services = assembly.services
        if configuration.tracing.enabled {
            // First in the list: started before, stopped after everything that makes spans.
            services.insert(try Self.bootstrapTracing(configuration.tracing), at: 0)
        }
        if let path = configuration.sourcePath, let keys = assembly.dependencies.signingKeys, !keys.current.isGenerated {
            services.append(SigningKeyReloader(keys: keys, configurationPath: path, environment: ProcessInfo.processInfo.environment, logger: logger))
        }
        let application = GatewayApplication.build(assembly.dependencies, services: services, logger: logger)
        // Says once the gateway has stopped whether its drain finished or ran out of shutdown_timeout.
        let reported = DrainReportingService(application, shutdownTimeout: configuration.server.shutdownTimeout, logger: logger)
        var groupConfiguration = ServiceGroupConfiguration(services: [reported], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.server.shutdownTimeout
        logger.info(
            "starting authgate",
            metadata: [
                "gw.version": "\(GatewayApplication.version)", "gw.store": "\(configuration.store.kind.rawValue)",
                "gw.address": "\(configuration.server.host):\(configuration.server.port)",
                "gw.config": "\(configuration.sourcePath ?? "built-in defaults")",
                "gw.allocator": "jemalloc \(MemoryAllocator.version ?? "(version unknown)")"
            ]
        )
        if !MemoryAllocator.servesMalloc() {
            logger.warning("jemalloc is linked but does not serve malloc (libc's allocator does): expect slower answers under load")
        }
        try await ServiceGroup(configuration: groupConfiguration).run()
        logger.info("authgate stopped")
    }

    /// Bootstraps OpenTelemetry traces over OTLP/HTTP (protobuf); the returned service exports them.
    static func bootstrapTracing(_ tracing: TracingConfiguration) throws -> any Service {
        var otel = OTel.Configuration.default
        otel.serviceName = tracing.serviceName
        otel.logs.enabled = false
        otel.metrics.enabled = false
        otel.traces.enabled = true
        otel.traces.exporter = .otlp
        otel.traces.otlpExporter.endpoint = tracing.endpoint
        otel.traces.otlpExporter.protocol = .httpProtobuf
        otel.propagators = [.traceContext]
        let exporter = try OTel.bootstrap(configuration: otel)
        GatewaySpans.enable()
        return exporter
    }

    static let developmentBanner: String = {
        let lines = [
            "AuthGate is running in DEVELOPMENT MODE",
            "- memory store: users and sessions are lost when the process stops",
            "- signing key generated at start: every token is void after a restart",
            "Never expose this instance. Production: store.kind redis + signing keys."
        ]
        let width = lines.map(\.count).max() ?? 0
        let border = String(repeating: "*", count: width + 6)
        return ([border] + lines.map { "*  " + $0 + String(repeating: " ", count: width - $0.count) + " *" } + [border]).joined(separator: "\n")
    }()
}
