/// `server:`: where the gateway listens and how it sees the network.
public struct ServerConfiguration: Sendable {
    /// Address to bind.
    public var host: String
    /// Port to bind.
    public var port: Int
    /// The URL clients use to reach the gateway (used for the default token issuer).
    public var publicURL: String
    /// Peers whose `X-Forwarded-For` / `Forwarded` headers are believed.
    public var trustedProxies: [IPNetwork]
    /// How long graceful shutdown waits for in-flight requests.
    public var shutdownTimeout: Duration
    /// The port of a separate listener for `/metrics` (same host); 0 serves it on `port`.
    public var metricsPort: Int

    init(reading section: ConfigurationSection) {
        host = section.string("host", default: "127.0.0.1")
        port = section.int("port", default: 9999, in: 0...65535)
        let defaultHost = host.contains(":") ? "[\(host)]" : (host == "0.0.0.0" ? "127.0.0.1" : host)
        publicURL = section.string("public_url", default: "http://\(defaultHost):\(port)")
        if !(publicURL.hasPrefix("http://") || publicURL.hasPrefix("https://")) || publicURL.hasSuffix("/") {
            section.report("public_url", "\"\(publicURL)\" must be an http:// or https:// URL without a trailing slash")
        }
        trustedProxies = section.stringList("trusted_proxies").compactMap { text in
            guard let network = IPNetwork(text) else {
                section.report("trusted_proxies", "\"\(text)\" is not an IP address or CIDR network (like 10.0.0.0/8 or ::1)")
                return nil
            }
            return network
        }
        shutdownTimeout = section.duration("shutdown_timeout", default: .seconds(30), maximum: .seconds(3600))
        metricsPort = section.int("metrics_port", default: 0, in: 0...65535)
        section.finish()
    }
}
