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
    /// Most client connections open at once; one more is answered 503 and closed.
    public var maxConnections: Int
    /// Longest time from a connection's opening, or a request's first byte, to its complete head
    /// (slowloris).
    public var requestHeadTimeout: Duration
    /// Longest time an idle connection is kept between requests.
    public var keepAliveTimeout: Duration
    /// Longest silence of a client while its request body is read, and longest time a client may
    /// leave a response unread; also bounds how long the rest of a body is awaited after an early
    /// response.
    public var clientIdleTimeout: Duration
    /// Browser origins allowed to call `/auth/v1` (`scheme://host[:port]`, or `*` for any); none by
    /// default (no CORS headers, preflights unanswered).
    public var corsAllowedOrigins: [String]
    /// TLS on the listener; nil for plain HTTP (local use, behind a terminating load balancer).
    public var tls: ServerTLSConfiguration?
    /// HTTP/2 for clients.
    public var http2: HTTP2Configuration

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
        maxConnections = section.int("max_connections", default: 10_000, in: 1...1_000_000)
        requestHeadTimeout = section.duration("request_head_timeout", default: .seconds(10), minimum: .milliseconds(100), maximum: .seconds(600))
        keepAliveTimeout = section.duration("keep_alive_timeout", default: .seconds(60), minimum: .milliseconds(100), maximum: .seconds(3600))
        clientIdleTimeout = section.duration("client_idle_timeout", default: .seconds(30), minimum: .milliseconds(100), maximum: .seconds(3600))
        corsAllowedOrigins = section.stringList("cors_allowed_origins").compactMap { text in
            guard let origin = Self.canonicalOrigin(text) else {
                section.report(
                    "cors_allowed_origins",
                    "\"\(text)\" must be * or an origin such as https://app.example.com (scheme, host, optional port; no path)")
                return nil
            }
            return origin
        }
        if corsAllowedOrigins.contains("*"), corsAllowedOrigins.count > 1 {
            section.report("cors_allowed_origins", "* allows every origin; list it alone")
        }
        tls = section.contains("tls") ? ServerTLSConfiguration.read(section.section("tls")) : nil
        http2 = HTTP2Configuration.read(section.section("http2"))
        section.finish()
    }

    /// An origin in the one form browsers send it (`Origin`, RFC 6454 §6.2): `*`, or
    /// `http(s)://host[:port]` with nothing after, its host in ``HostName``'s form (lower case,
    /// no trailing dot, an IPv6 literal in RFC 5952 form as the WHATWG URL parser writes it) and
    /// the scheme's default port left out (`https://App.example.com:443` is
    /// `https://app.example.com`, `http://[0:0::01]:8080` is `http://[::1]:8080`); nil for
    /// anything else, a port outside 1-65535 included. Configured origins and a request's
    /// `Origin` are compared in this form.
    public static func canonicalOrigin(_ text: String) -> String? {
        if text == "*" { return text }
        let lower = text.lowercased()
        let scheme: String
        let defaultPort: Substring
        if lower.hasPrefix("https://") {
            (scheme, defaultPort) = ("https://", "443")
        } else if lower.hasPrefix("http://") {
            (scheme, defaultPort) = ("http://", "80")
        } else {
            return nil
        }
        let authority = lower.dropFirst(scheme.count)
        guard !authority.isEmpty, authority.utf8.count <= 253 + 6,
            authority.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "[" || $0 == "]") }),
            let host = HostName.canonical(String(authority))
        else { return nil }
        // HostName has checked the port (1-65535, one spelling); it is what follows the last
        // colon outside an IPv6 literal's brackets.
        let afterLiteral = authority.lastIndex(of: "]").map { authority[authority.index(after: $0)...] } ?? authority
        guard let colon = afterLiteral.lastIndex(of: ":") else { return scheme + host }
        let port = afterLiteral[afterLiteral.index(after: colon)...]
        return port == defaultPort ? scheme + host : scheme + host + ":" + port
    }
}
