import HTTPTypes
import Hummingbird

/// The routes whose path is constant in every component (`/auth/v1/user`, not `/…/users/:id`),
/// by their exact path and method, for ``GatewayRouterResponder`` to answer without walking
/// Hummingbird's trie, which compares each path component as `Character`s (the table saves
/// about 9,000 instructions of a `GET /user`'s 186,000, and 12,000 of the cheapest answer's
/// 103,000).
///
/// A table hit must be the route the trie would resolve. Hummingbird 2's trie tries a node's
/// constant children before its patterns, so a registered constant path resolves to its own
/// route; but the trie descends into the first child that matches a component and comes back to
/// try its siblings only in part, so the table does not rest on that order: a constant path is
/// left out when a route with a capture or wildcard could reach it (that route's constant
/// components before its first pattern equal the path's first ones, and the pattern matches the
/// path's next component). A path spelled any other way (`/user/`, `//user`) is not in the table
/// and goes to the trie, which resolves it as before.
struct ConstantPathTable<Value> {
    /// One constant path's answers.
    struct Endpoint {
        /// The route's path as Hummingbird records it for the request (`endpointPath`).
        let path: String
        var methods: [HTTPRequest.Method: Value]
    }

    private let endpoints: [String: Endpoint]

    /// The endpoint registered for exactly `path` (a request's path without its query) and
    /// `method`: its recorded path and its value; nil when the trie must decide.
    func lookup(_ path: String, method: HTTPRequest.Method) -> (path: String, value: Value)? {
        guard let endpoint = endpoints[path], let value = endpoint.methods[method] else { return nil }
        return (endpoint.path, value)
    }

    /// The paths in the table (for tests).
    var paths: Set<String> { Set(endpoints.keys) }

    /// Collects routes as they are registered (``GatewayRouter``) and builds the table.
    struct Builder {
        private var constant: [String: (components: [RouterPath.Element], endpoint: Endpoint)] = [:]
        private var patterns: [RouterPath] = []

        init() {}

        /// Records one route, as `Router.on` records it: a second value for the same path and
        /// method replaces the first (Hummingbird refuses that registration anyway).
        mutating func add(_ path: RouterPath, method: HTTPRequest.Method, value: Value) {
            guard path.allSatisfy(Self.isConstant) else {
                patterns.append(path)
                return
            }
            constant[path.description, default: (path.components, Endpoint(path: path.description, methods: [:]))].endpoint.methods[method] = value
        }

        /// The table of every constant path that no pattern route can reach.
        func build() -> ConstantPathTable {
            var endpoints: [String: Endpoint] = [:]
            for (key, entry) in constant where !patterns.contains(where: { Self.mayReach($0, entry.components) }) {
                endpoints[key] = entry.endpoint
            }
            return ConstantPathTable(endpoints: endpoints)
        }

        /// Whether `element` is a constant component (`user`, not `:id`, `*` or `{name}.json`).
        static func isConstant(_ element: RouterPath.Element) -> Bool {
            element == element.description
        }

        /// Whether the trie, resolving the constant path `components`, could descend into
        /// `pattern`'s first non-constant component: the components before it are equal and it
        /// matches the path's component at its place.
        static func mayReach(_ pattern: RouterPath, _ components: [RouterPath.Element]) -> Bool {
            guard let first = pattern.firstIndex(where: { !isConstant($0) }), first < components.count else { return false }
            for index in 0..<first where pattern[index].description != components[index].description {
                return false
            }
            return pattern[first] ~= components[first].description
        }
    }
}

extension ConstantPathTable: Sendable where Value: Sendable {}
extension ConstantPathTable.Endpoint: Sendable where Value: Sendable {}
