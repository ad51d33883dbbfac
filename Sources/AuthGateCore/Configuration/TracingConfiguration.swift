/// `tracing:`: OpenTelemetry traces over OTLP/HTTP, off by default.
public struct TracingConfiguration: Sendable {
    /// Whether spans are recorded and exported.
    public var enabled: Bool
    /// The collector's OTLP/HTTP traces endpoint.
    public var endpoint: String
    /// `service.name` of every span.
    public var serviceName: String

    init(reading section: ConfigurationSection) {
        enabled = section.bool("enabled", default: false)
        endpoint = section.string("endpoint", default: "http://127.0.0.1:4318/v1/traces")
        if !ConfigurationValueParsers.isFetchableURL(endpoint) {
            section.report("endpoint", "is OTLP over HTTP: it " + ConfigurationValueParsers.fetchableURLRule)
        }
        serviceName = section.string("service_name", default: "authgate")
        section.finish()
    }
}
