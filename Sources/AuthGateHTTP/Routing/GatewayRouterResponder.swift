public import Hummingbird

/// Answers a request whose path is exactly one of the table's (``ConstantPathTable``) as
/// Hummingbird's `RouterResponder` answers it once its trie has found the route: the route's
/// path as the request's `endpointPath`, no parameters, the route's middleware chain and
/// responder, an `HTTPResponseError` it throws turned into its response. Any other request (another
/// path or spelling, another method, a path a pattern route could take) goes to the trie.
public struct GatewayRouterResponder<Context: RequestContext>: HTTPResponder {
    let trie: RouterResponder<Context>
    let table: ConstantPathTable<any HTTPResponder<Context>>

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard let (path, responder) = table.lookup(request.uri.path, method: request.method) else {
            return try await trie.respond(to: request, context: context)
        }
        do {
            var context = context
            context.coreContext.parameters = .init()
            context.coreContext.endpointPath.value = path
            return try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }
}
