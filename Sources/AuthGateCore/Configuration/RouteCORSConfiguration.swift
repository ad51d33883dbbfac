/// A route's `cors`: the gateway answers browsers' CORS for a proxied API itself, in the one
/// decision per request. Preflights (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
/// are answered 204 without reaching the upstream or needing a token; every other answer to an
/// allowed origin (the upstream's, and the gateway's own 401, 403, 502, ...) carries
/// `Access-Control-Allow-Origin`, and the upstream's own `Access-Control-*` headers are replaced.
public struct RouteCORSConfiguration: Sendable, Hashable {
    /// Canonical origins (`https://app.example.com`), or `["*"]` for any.
    public var allowedOrigins: [String]
    /// Request headers a browser may send (lower case), answered to preflights.
    public var allowedHeaders: [String]
    /// Methods answered to preflights: the route's `methods`, or the usual ones when it has none.
    public var allowedMethods: [String]
    /// Response headers scripts may read besides the safelisted ones.
    public var exposeHeaders: [String]
    /// `Access-Control-Allow-Credentials: true` (cookies, HTTP authentication); not with `*`.
    public var allowCredentials: Bool
    /// How long a browser may cache a preflight's answer.
    public var maxAge: Duration

    /// The request headers Supabase's clients send, allowed when the route names none.
    public static let defaultAllowedHeaders = ["authorization", "content-type", "apikey", "x-client-info", "x-supabase-api-version"]

    /// Whether `origin` (as the browser sent it) may read this route's answers, and the
    /// `Access-Control-Allow-Origin` value for it.
    public func allowedOriginValue(for origin: String) -> String? {
        if allowedOrigins == ["*"] { return allowCredentials ? nil : "*" }
        guard let canonical = ServerConfiguration.canonicalOrigin(origin), canonical != "*" else { return nil }
        return allowedOrigins.contains(canonical) ? origin : nil
    }

    static func read(_ section: ConfigurationSection, routeMethods: [String]) -> RouteCORSConfiguration {
        let origins = section.stringList("allowed_origins").compactMap { text -> String? in
            guard let origin = ServerConfiguration.canonicalOrigin(text) else {
                section.report("allowed_origins", "\"\(text)\" must be * or an origin such as https://app.example.com (no path)")
                return nil
            }
            return origin
        }
        if origins.isEmpty { section.report("allowed_origins", "list the browser origins allowed to call this route, or [\"*\"]") }
        if origins.contains("*"), origins.count > 1 { section.report("allowed_origins", "* allows every origin; list it alone") }
        /// A list of header names under `key`, each reported when it is not one.
        func headerNames(_ key: String, default defaultValue: [String] = []) -> [String] {
            let names = section.stringList(key, default: defaultValue)
            for name in names where !HTTPToken.isToken(name) {
                section.report(key, "\"\(name)\" is not a header name")
            }
            return names
        }
        let headers = headerNames("allowed_headers", default: Self.defaultAllowedHeaders).map { $0.lowercased() }
        let expose = headerNames("expose_headers")
        let credentials = section.bool("allow_credentials", default: false)
        if credentials, origins == ["*"] { section.report("allow_credentials", "browsers refuse credentials with *: list the origins") }
        let maxAge = section.duration("max_age", default: .seconds(600), maximum: .seconds(86_400))
        section.finish()
        let methods = routeMethods.isEmpty ? ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] : routeMethods.filter { $0 != "OPTIONS" }
        return RouteCORSConfiguration(
            allowedOrigins: origins, allowedHeaders: headers, allowedMethods: methods, exposeHeaders: expose, allowCredentials: credentials,
            maxAge: maxAge)
    }
}
