import HTTPTypes
public import Hummingbird

/// `405 Method Not Allowed` with an `Allow` header (RFC 9110, 15.5.6) for a path the router
/// serves, asked with a method it does not serve there (`TRACE`, `OPTIONS` outside a CORS
/// preflight, `QUERY`, any other): Hummingbird's router answers those 404, as if the path did not
/// exist. `HEAD` is allowed wherever `GET` is (the router generates it).
///
/// Added last, after every route (``make(for:)``), so that it wraps only the router's not-found
/// answer: an endpoint's own 404 (a user not found) is never turned into a 405.
public struct MethodNotAllowedMiddleware: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    /// One path the router serves, split in components, and its methods.
    struct ServedPath {
        let components: [RouterPath.Element]
        var methods: Set<HTTPRequest.Method>
    }

    private let served: [ServedPath]

    init(served: [ServedPath]) {
        self.served = served
    }

    /// The middleware for every path `router` serves now.
    public static func make(for router: GatewayRouter<Context>) -> Self {
        var byPath: [String: ServedPath] = [:]
        for route in router.routes {
            byPath[route.path.description, default: ServedPath(components: route.path.components, methods: [])].methods.insert(route.method)
        }
        return Self(served: Array(byPath.values))
    }

    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let allow = allowHeader(for: request.uri.path) else { throw error }
            throw GoTrueError(.methodNotAllowed, code: "method_not_allowed", message: "Method not allowed", headers: [.allow: allow])
        }
    }

    /// The `Allow` value for `path`: the methods of every served path it matches, sorted; nil
    /// when it matches none (a 404 stays a 404).
    func allowHeader(for path: String) -> String? {
        let segments = path.split(separator: "/")
        var methods = Set<HTTPRequest.Method>()
        for candidate in served where Self.matches(candidate.components, segments) { methods.formUnion(candidate.methods) }
        guard !methods.isEmpty else { return nil }
        if methods.contains(.get) { methods.insert(.head) }
        return methods.map(\.rawValue).sorted().joined(separator: ", ")
    }

    /// Whether `segments` match `components` one for one (`**` matches the rest).
    static func matches(_ components: [RouterPath.Element], _ segments: [Substring]) -> Bool {
        for (index, component) in components.enumerated() {
            if component.description == "**" { return true }
            guard index < segments.count, component ~= segments[index] else { return false }
        }
        return components.count == segments.count
    }
}
