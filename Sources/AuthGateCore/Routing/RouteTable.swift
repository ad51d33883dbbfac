/// The proxy's routes, compiled once at start: the longest matching `path_prefix` wins, among
/// routes whose `host` (if any) and `methods` (if any) match.
public struct RouteTable: Sendable {
    /// A route ready to match, with its upstreams' rotation state kept elsewhere.
    public struct Route: Sendable {
        public let index: Int
        public let configuration: RouteConfiguration
    }

    private let routes: [Route]

    /// Compiles the configured routes: longest prefixes first, host-specific before any-host.
    public init(_ configurations: [RouteConfiguration]) {
        routes = configurations.enumerated().map { Route(index: $0.offset, configuration: $0.element) }.sorted { left, right in
            if left.configuration.pathPrefix.utf8.count != right.configuration.pathPrefix.utf8.count {
                return left.configuration.pathPrefix.utf8.count > right.configuration.pathPrefix.utf8.count
            }
            if (left.configuration.host != nil) != (right.configuration.host != nil) { return left.configuration.host != nil }
            return left.index < right.index
        }
    }

    /// True when no route is configured.
    public var isEmpty: Bool { routes.isEmpty }

    /// The route for a request, or nil.
    /// - Parameters:
    ///   - host: the `Host` header (a port, if present, is ignored), lower-cased by the caller or not.
    ///   - path: the request path, without the query.
    ///   - method: the request method, upper case.
    public func match(host: String?, path: String, method: String) -> Route? {
        let requestHost = host.map(Self.normalizedHost)
        for route in routes {
            let configuration = route.configuration
            if let wanted = configuration.host, wanted != requestHost { continue }
            if !configuration.methods.isEmpty, !configuration.methods.contains(method) { continue }
            if Self.path(path, hasPrefix: configuration.pathPrefix) { return route }
        }
        return nil
    }

    /// `path` starts with `prefix`; a prefix without a trailing slash matches only at a segment
    /// boundary (`/api` matches `/api` and `/api/x`, not `/apix`).
    static func path(_ path: String, hasPrefix prefix: String) -> Bool {
        guard path.hasPrefix(prefix) else { return false }
        if prefix.hasSuffix("/") || path.utf8.count == prefix.utf8.count { return true }
        return path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: prefix.utf8.count)] == UInt8(ascii: "/")
    }

    static func normalizedHost(_ host: String) -> String {
        var text = host.lowercased()
        if text.hasPrefix("[") {
            if let close = text.firstIndex(of: "]") { text = String(text[...close]) }
        } else if let colon = text.lastIndex(of: ":") {
            text = String(text[..<colon])
        }
        return text
    }

    /// The path forwarded upstream: with the prefix removed when the route strips it, and the
    /// upstream's base path in front.
    public static func upstreamPath(for path: String, route: RouteConfiguration, upstream: RouteConfiguration.Upstream) -> String {
        var forwarded = path
        if route.stripPrefix {
            forwarded = String(path.dropFirst(route.pathPrefix.count))
            if !forwarded.hasPrefix("/") { forwarded = "/" + forwarded }
        }
        return upstream.basePath + forwarded
    }
}
