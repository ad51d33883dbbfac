import AuthGateCore
import HTTPTypes
public import Hummingbird

/// CORS for AuthGate's own endpoints (`server.cors_allowed_origins`), through Hummingbird's
/// `CORSMiddleware`: a request from an allowed origin gets `Access-Control-Allow-Origin` (its own
/// origin, `Vary: Origin`), and its preflight `OPTIONS` is answered 204 with the methods and the
/// headers the Supabase clients send (`apikey`, `authorization`, `x-client-info`,
/// `x-supabase-api-version`, `content-type`); any other origin gets no CORS header at all (its
/// preflight is not answered: the router's 405 for `OPTIONS`), and a request without `Origin` is
/// untouched.
public struct CORSPolicyMiddleware: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    private let allowed: Set<String>
    private let cors: CORSMiddleware<AuthGateRequestContext>

    /// The headers a browser may send (GoTrue's list plus `apikey`, which supabase-js always sends).
    static let allowedHeaders: [HTTPField.Name] = [
        .accept, .authorization, .contentType, .constant("apikey"), .constant("x-client-info"),
        .constant("x-supabase-api-version"), .constant("x-request-id")
    ]

    /// - Parameter origins: canonical origins (``ServerConfiguration/canonicalOrigin(_:)``), or `*`.
    public init(origins: [String]) {
        allowed = Set(origins)
        cors = CORSMiddleware(
            allowOrigin: origins.contains("*") ? .all : .originBased,
            allowHeaders: Self.allowedHeaders,
            allowMethods: [.get, .post, .put, .delete, .options],
            allowCredentials: false,
            exposedHeaders: ["X-Total-Count", "Link", "X-Request-Id", "X-Supabase-Api-Version", "x-sb-error-code", "Retry-After"],
            maxAge: .hours(1)
        )
    }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let origin = request.headers[.origin],
            allowed.contains("*") || ServerConfiguration.canonicalOrigin(origin).map({ allowed.contains($0) }) == true
        else {
            return try await next(request, context)
        }
        return try await cors.handle(request, context: context, next: next)
    }
}
