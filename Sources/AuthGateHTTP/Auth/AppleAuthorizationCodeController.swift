public import AuthGateCore
public import Hummingbird
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/v1/user/apple/authorization_code` with `{"authorization_code": "…"}` (and
/// optionally `client_id`): an AuthGate endpoint for apps whose Supabase client cannot add the
/// code to the id_token grant. The caller's bearer token names the user; the code is exchanged at
/// Apple for the user's Apple identity and Apple's refresh token is kept, sealed, for revoking
/// when the account is deleted. 200 with the identity in GoTrue's shape.
///
/// Each call costs a round trip to Apple under the gateway's own client secret, so besides the
/// token endpoint's budget per client address, a user's calls count against
/// `rate_limits.user_update`, the budget of every change a user makes to their own account: a
/// user calling from many addresses cannot have the gateway flood Apple in their name.
public struct AppleAuthorizationCodeController: Sendable {
    let accounts: AccountService
    let userUpdateLimit: RateLimit?
    let limiter: RateLimiter

    public init(accounts: AccountService, userUpdateLimit: RateLimit?, store: any AuthStore) {
        self.accounts = accounts
        self.userUpdateLimit = userUpdateLimit
        self.limiter = RateLimiter(store: store)
    }

    struct Body: Decodable {
        let authorizationCode: String?
        let clientID: String?

        enum CodingKeys: String, CodingKey {
            case authorizationCode = "authorization_code"
            case clientID = "client_id"
        }
    }

    /// Registers the endpoint on `router` (the token endpoint's rate-limited group: each call
    /// costs a round trip to Apple).
    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .user))
            .post("/auth/v1/user/apple/authorization_code") { request, context in try await keep(request, context) }
    }

    private func keep(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        if let userUpdateLimit {
            try await RateLimitMiddleware.enforce(limiter, bucket: "user_update", key: caller.user.id, limit: userUpdateLimit, logger: context.logger)
        }
        let body = try await RequestSupport.decode(Body.self, from: request, limit: RequestSupport.tokenBodyBytes)
        guard let code = body.authorizationCode, !code.isEmpty else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "authorization_code is required")
        }
        do {
            let identity = try await accounts.keepAppleRefreshToken(
                for: caller, code: code, clientID: body.clientID.flatMap { $0.isEmpty ? nil : $0 }, now: Date())
            context.logger.notice("apple refresh token kept", metadata: ["gw.user_id": "\(caller.user.id)", "gw.outcome": "ok"])
            return try RequestSupport.json(GoTrueJSON.identity(identity))
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            context.logger.notice("apple authorization code refused", metadata: ["gw.outcome": "\(error.code)", "gw.reason": "\(error.message)"])
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
    }
}
