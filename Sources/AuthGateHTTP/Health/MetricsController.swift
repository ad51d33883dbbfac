import AuthGateCore
public import Hummingbird
public import Prometheus

/// `GET /metrics`: every metric in Prometheus' text format (the names are listed in
/// ``GatewayMetrics`` and RedisBridge's `RedisMetrics`).
public struct MetricsController: Sendable {
    let registry: PrometheusCollectorRegistry

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    public func register<Context: RequestContext>(on router: some RouterMethods<Context>) {
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
    }
}
