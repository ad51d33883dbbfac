public import HTTPTypes
public import Hummingbird

/// The gateway's router: Hummingbird's `Router` (options `autoGenerateHeadEndpoints`), which
/// every route is registered on as usual, and beside it a ``ConstantPathTable`` of the routes
/// whose paths are constant, holding the same middleware chain `Router.on` builds for them.
/// ``GatewayRouterResponder`` answers those from the table and everything else through the
/// router's trie.
///
/// Groups (`group()`) work as on the router: a group composes its own middleware and calls its
/// parent's `on` with the whole path, so every route comes through ``on(_:method:responder:)``.
public final class GatewayRouter<Context: RequestContext>: RouterMethods, HTTPResponderBuilder {
    /// The router every route is registered on; its trie answers what the table does not.
    /// Private: a route registered on it directly would miss the table's check that no pattern
    /// route can reach a constant path it answers.
    private let router: Router<Context>
    private var table = ConstantPathTable<any HTTPResponder<Context>>.Builder()

    public init(context: Context.Type = Context.self) {
        router = Router(context: context, options: .autoGenerateHeadEndpoints)
    }

    /// Registers `responder` on the router, and records it for the table wrapped in the router's
    /// middleware as it is now, which is what the router itself stores for the route.
    @discardableResult
    public func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        router.on(path, method: method, responder: responder)
        table.add(path, method: method, value: router.middlewares.constructResponder(finalResponder: responder))
        return self
    }

    /// Adds middleware to the router: it wraps the routes registered after it and the not-found
    /// answer, as on Hummingbird's router.
    @discardableResult
    public func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }

    /// Every route registered so far (Hummingbird's description of them).
    public var routes: [Router<Context>.RouteDescription] { router.routes }

    public func buildResponder() -> GatewayRouterResponder<Context> {
        GatewayRouterResponder(trie: router.buildResponder(), table: table.build())
    }
}
