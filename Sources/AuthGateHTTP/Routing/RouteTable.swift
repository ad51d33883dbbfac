public import AuthGateCore

/// The proxy's routes, compiled once at start: the longest matching `path_prefix` wins, among
/// routes whose `host` (if any) and `methods` (if any) match.
///
/// Matching takes a normalized path (``RequestTarget``) and a canonical host (``HostName``):
/// the decision is made on the form that is forwarded.
public struct RouteTable: Sendable {
    /// A route ready to match; its upstreams' rotation state is kept by ``EdgeProxy``. A class,
    /// so that a plan holding it copies a reference, not the whole configuration.
    public final class Route: Sendable {
        public let index: Int
        public let configuration: RouteConfiguration

        init(index: Int, configuration: RouteConfiguration) {
            self.index = index
            self.configuration = configuration
        }
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
    ///   - host: the request's canonical host (``HostName/canonical(_:)``), nil without one.
    ///   - path: the normalized path (``RequestTarget/path``).
    ///   - method: the request method, upper case.
    public func match(host: String?, path: String, method: String) -> Route? {
        for route in routes {
            let configuration = route.configuration
            if let wanted = configuration.host, wanted != host { continue }
            if !configuration.methods.isEmpty, !configuration.methods.contains(method) { continue }
            if Self.path(path, hasPrefix: configuration.pathPrefix) { return route }
        }
        return nil
    }

    /// `path` starts with `prefix`; a prefix without a trailing slash matches only at a segment
    /// boundary (`/api` matches `/api` and `/api/x`, not `/apix`).
    static func path(_ path: String, hasPrefix prefix: String) -> Bool {
        guard path.utf8.starts(with: prefix.utf8) else { return false }
        if prefix.utf8.last == UInt8(ascii: "/") || path.utf8.count == prefix.utf8.count { return true }
        return path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: prefix.utf8.count)] == UInt8(ascii: "/")
    }

    /// The path forwarded upstream for a normalized `path` that matched `route`: with the prefix
    /// removed when the route strips it, and the upstream's base path in front. Both parts are
    /// normalized (the configuration refuses a prefix or base path that is not), so the result
    /// holds no dot segment either.
    public static func upstreamPath(for path: String, route: RouteConfiguration, upstream: RouteConfiguration.Upstream) -> String {
        guard route.stripPrefix else { return upstream.basePath.isEmpty ? path : upstream.basePath + path }
        let prefixLength = min(route.pathPrefix.utf8.count, path.utf8.count)
        var forwarded = path[path.utf8.index(path.utf8.startIndex, offsetBy: prefixLength)...]
        if forwarded.utf8.first == UInt8(ascii: "/") { forwarded = forwarded.dropFirst() }
        return upstream.basePath + "/" + forwarded
    }
}
