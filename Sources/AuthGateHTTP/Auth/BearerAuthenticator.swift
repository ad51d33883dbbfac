public import AuthGateCore
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The one way a bearer-protected endpoint learns its caller: attached to the endpoints' router
/// group, it checks `Authorization: Bearer` once, with GoTrue's rules, before the handler runs,
/// and puts the caller in the request's context. A handler behind it never reads the header.
///
/// - ``Requirement/user``: a valid access token whose user exists, whose session is alive and
///   who is neither banned nor deleted (``AccountService/authenticate(bearer:now:)``): `/user`,
///   `/logout`.
/// - ``Requirement/admin(roles:)``: a role in `tokens.admin_roles`, with the same session and ban
///   checks when the token names a session or a user
///   (``AccountService/authenticateAdmin(bearer:roles:now:)``): the admin API.
public struct BearerAuthenticator: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    public enum Requirement: Sendable {
        case user
        case admin(roles: Set<String>)
    }

    private let accounts: AccountService
    private let requirement: Requirement

    public init(accounts: AccountService, requirement: Requirement) {
        self.accounts = accounts
        self.requirement = requirement
    }

    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        guard let bearer = RequestSupport.bearerToken(request, context) else { throw RequestSupport.missingBearer }
        var context = context
        var audit = AuditContext.current
        do {
            switch requirement {
            case .user:
                let caller = try await accounts.authenticate(bearer: bearer, now: Date())
                context.caller = caller
                context.outcome.userID = caller.user.id
                audit.actor = caller.user.id
            case .admin(let roles):
                let claims = try await accounts.authenticateAdmin(bearer: bearer, roles: roles, now: Date())
                context.adminClaims = claims
                context.outcome.userID = claims.sub
                audit.actor = claims.role
            }
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
        let authenticated = context
        return try await AuditContext.$current.withValue(audit) { try await next(request, authenticated) }
    }
}

extension AuthGateRequestContext {
    /// The caller proven by ``BearerAuthenticator`` (`.user`).
    /// - Throws: 401 when the endpoint was registered without the authenticator (a bug, failing closed).
    func requireCaller() throws -> AuthenticatedUser {
        guard let caller else { throw RequestSupport.missingBearer }
        return caller
    }
}
