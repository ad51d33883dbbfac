public import RedisBridge

/// One entry of `routes:`: which requests go to which upstreams, and who may send them.
public struct RouteConfiguration: Sendable, Hashable {
    /// Who may use a route.
    public enum AuthPolicy: String, Sendable, CaseIterable {
        /// A valid, unrevoked AuthGate access token is required.
        case required
        /// A token is checked when present (and refused when bad); requests without one pass.
        case optional
        /// No authentication; identity headers are still stripped.
        case `public`
    }

    /// An upstream base URL, split into its parts.
    public struct Upstream: Sendable, Hashable, CustomStringConvertible {
        public var scheme: String
        public var host: String
        public var port: Int
        /// Path prefix prepended to forwarded paths ("" for none).
        public var basePath: String

        public var description: String {
            "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)\(basePath)"
        }

        /// Parses `http(s)://host[:port][/base]`; nil for anything else (credentials, a query, a
        /// host or port outside ``HostName/isValidAuthority(_:)``).
        init?(_ text: String) {
            guard let schemeEnd = text.firstRange(of: "://") else { return nil }
            let scheme = text[..<schemeEnd.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https" else { return nil }
            var rest = text[schemeEnd.upperBound...]
            var basePath = ""
            if let slash = rest.firstIndex(of: "/") {
                basePath = String(rest[slash...])
                rest = rest[..<slash]
            }
            if basePath.hasSuffix("/") { basePath.removeLast() }
            guard !rest.contains("@"), !rest.contains("?"), !basePath.contains("?"), !basePath.contains("#") else { return nil }
            // The host and port in HostName's rules (a port 1-65535 in digits only, no leading
            // zero; a valid name, IPv4 or IPv6 literal): they become the upstream's `Host`.
            guard HostName.isValidAuthority(rest.utf8) else { return nil }
            var host = String(rest)
            var port = scheme == "https" ? 443 : 80
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                host = String(rest[rest.index(after: rest.startIndex)..<close])
                let after = rest[rest.index(after: close)...]
                if after.hasPrefix(":") {
                    guard let value = DecimalInteger.parse(after.dropFirst(), in: 1...65535) else { return nil }
                    port = value
                } else if !after.isEmpty {
                    return nil
                }
            } else if let colon = rest.lastIndex(of: ":") {
                host = String(rest[..<colon])
                guard let value = DecimalInteger.parse(rest[rest.index(after: colon)...], in: 1...65535) else { return nil }
                port = value
            }
            guard !host.isEmpty else { return nil }
            self.scheme = scheme
            self.host = host
            self.port = port
            self.basePath = basePath
        }
    }

    public var name: String
    public var pathPrefix: String
    /// Only requests for this `Host` match (nil: any host).
    public var host: String?
    /// Only these methods match (empty: any method).
    public var methods: [String]
    public var upstreams: [Upstream]
    /// Remove ``pathPrefix`` before forwarding.
    public var stripPrefix: Bool
    public var auth: AuthPolicy
    /// Anonymous users' tokens are accepted.
    public var allowAnonymous: Bool
    /// Claims the token must carry with these exact values (`role`, `aal`, `app_metadata.plan`).
    public var requireClaims: [String: String]
    /// Pass the client's `Authorization` header to the upstream.
    public var forwardAuthorization: Bool
    /// Longest wait for the upstream's response head (504 after it).
    public var timeout: Duration
    /// Longest wait for a connection to an upstream (then 502, or the next upstream).
    public var connectTimeout: Duration
    /// Longest silence while reading from the upstream, head or body: 504 before the head, the
    /// connection cut after it.
    public var idleTimeout: Duration
    /// Largest request body accepted.
    public var maxBody: Int
    /// CORS answered by the gateway for browser apps calling this API; nil: requests and answers
    /// pass as they are (the upstream's own CORS headers included).
    public var cors: RouteCORSConfiguration?
    /// For `https://` upstreams: the CAs to trust (the system's roots by default), the expected
    /// server name, and the client certificate for mutual TLS.
    public var tls: TLSClientConfiguration

    /// Some upstream is `https://`: ``tls`` applies.
    public var hasHTTPSUpstream: Bool { upstreams.contains { $0.scheme == "https" } }

    private static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"]

    init(reading section: ConfigurationSection) {
        name = section.string("name", default: "")
        if name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            section.report("name", "\"\(name)\" must be a non-empty name of letters, digits, - or _ (it labels logs and metrics)")
        }
        pathPrefix = section.string("path_prefix", default: "")
        if !pathPrefix.hasPrefix("/") {
            section.report("path_prefix", "\"\(pathPrefix)\" must start with /")
        } else if let normalized = try? RequestTarget.normalize(pathPrefix), normalized.path != pathPrefix || normalized.query != nil {
            // Requests are matched on their normalized path, so a prefix in any other form would never match.
            section.report("path_prefix", "\"\(pathPrefix)\" is not in normalized form; write it as \"\(normalized.path)\"")
        } else if (try? RequestTarget.normalize(pathPrefix)) == nil {
            section.report("path_prefix", "\"\(pathPrefix)\" is not a valid path (no .., encoded /, \\ or control characters)")
        } else if pathPrefix == "/auth/v1" || pathPrefix.hasPrefix("/auth/v1/") || "/auth/v1/".hasPrefix(pathPrefix) && pathPrefix.count > 1 {
            section.report("path_prefix", "\"\(pathPrefix)\" overlaps /auth/v1, which AuthGate serves itself")
        }
        host = section.optionalString("host")?.lowercased()
        if let host {
            // Requests are matched on their canonical host, so a host in any other form would never match.
            switch HostName.canonical(host) {
            case nil:
                section.report("host", "\"\(host)\" is not a host name, a dotted-decimal IPv4 address or a bracketed IPv6 address")
            case let canonical? where canonical != host:
                section.report("host", "\"\(host)\" is not in canonical form (no port, no trailing dot); write it as \"\(canonical)\"")
            default:
                break
            }
        }
        methods = section.stringList("methods").map { $0.uppercased() }
        for method in methods where !Self.knownMethods.contains(method) {
            section.report("methods", "\"\(method)\" is not an HTTP method")
        }
        let upstreamTexts = section.stringList("upstreams")
        if upstreamTexts.isEmpty { section.report("upstreams", "list at least one upstream URL (like http://127.0.0.1:8080)") }
        upstreams = upstreamTexts.compactMap { text in
            guard let upstream = Upstream(text) else {
                section.report("upstreams", "\"\(text)\" is not an http:// or https:// URL with a host (and no query or credentials)")
                return nil
            }
            if !upstream.basePath.isEmpty, (try? RequestTarget.normalize(upstream.basePath))?.path != upstream.basePath {
                section.report(
                    "upstreams", "\"\(text)\": the base path must be in normalized form (no dot segments, //, or encodings of unreserved characters)")
                return nil
            }
            return upstream
        }
        stripPrefix = section.bool("strip_prefix", default: false)
        auth = section.choice("auth", default: .required)
        allowAnonymous = section.bool("allow_anonymous", default: false)
        var claims: [String: String] = [:]
        for (key, value) in section.stringMap("require_claims") {
            if key == "user_metadata" || key.hasPrefix("user_metadata.") {
                // Every user writes their own user_metadata (PUT /user): it decides nothing.
                section.report(
                    "require_claims",
                    "\"\(key)\" cannot authorize: every user can set their own user_metadata; use app_metadata.<key>, which only admins set"
                )
                continue
            }
            claims[key] = value
        }
        requireClaims = claims
        forwardAuthorization = section.bool("forward_authorization", default: false)
        timeout = section.duration("timeout", default: .seconds(30), minimum: .milliseconds(1))
        connectTimeout = section.duration("connect_timeout", default: .seconds(5), minimum: .milliseconds(1))
        idleTimeout = section.duration("idle_timeout", default: .seconds(60), minimum: .milliseconds(1))
        maxBody = section.byteSize("max_body", default: 10 << 20)
        cors = section.contains("cors") ? RouteCORSConfiguration.read(section.section("cors"), routeMethods: methods) : nil
        tls = TLSClientConfiguration()
        if section.contains("tls") {
            tls = TLSClientConfiguration.read(section.section("tls"))
            if !upstreams.isEmpty, !hasHTTPSUpstream {
                section.report("tls", "TLS settings apply to https:// upstreams, and this route has none")
            }
        }
        section.finish()
    }
}
