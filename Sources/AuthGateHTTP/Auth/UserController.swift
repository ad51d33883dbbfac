public import AuthGateCore
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /signup` (anonymous), `GET`/`PUT /user`, `POST /logout`, `GET /settings`.
///
/// `/user` and `/logout` sit behind ``BearerAuthenticator``. What a user may write is bounded:
/// `user_metadata` by `users.max_user_metadata` after the merge, each request body by what its
/// endpoint can need, and `PUT /user` by `rate_limits.user_update` per user.
public struct UserController: Sendable {
    let accounts: AccountService
    let providers: ProvidersConfiguration
    let users: UsersConfiguration
    let userUpdateLimit: RateLimit?
    let limiter: RateLimiter
    let trustedProxies: [IPNetwork]
    /// The users `GET /user`, `PUT /user` and anonymous sign-ups answer with, as JSON text already written.
    let userTexts: UserTextCache

    public init(accounts: AccountService, configuration: AuthGateConfiguration, store: any AuthStore, userTexts: UserTextCache) {
        self.trustedProxies = configuration.server.trustedProxies
        self.userTexts = userTexts
        self.accounts = accounts
        self.providers = configuration.providers
        self.users = configuration.users
        self.userUpdateLimit = configuration.rateLimits.userUpdate
        self.limiter = RateLimiter(store: store)
    }

    /// Registers the endpoints; `signup` is the (rate-limited) group sign-up goes on.
    public func register(on router: some RouterMethods<AuthGateRequestContext>, signup: some RouterMethods<AuthGateRequestContext>) {
        signup.post("/auth/v1/signup") { request, context in try await self.signup(request, context) }
        let authenticated = router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .user))
        authenticated.get("/auth/v1/user") { _, context in try await currentUser(context) }
        authenticated.put("/auth/v1/user") { request, context in try await updateUser(request, context) }
        authenticated.post("/auth/v1/logout") { request, context in try await logout(request, context) }
        // The configuration does not change while serving: the answer is rendered once.
        let settings = try? settings()
        router.get("/auth/v1/settings") { _, _ in
            guard let settings else { throw HTTPError(.internalServerError) }
            return settings
        }
    }

    /// The largest body `PUT /user` and `/signup` read: the metadata cap plus room for the rest.
    private var bodyLimit: Int { users.maxUserMetadata + 4096 }

    struct SignupBody: Decodable {
        let email: String?
        let phone: String?
        let data: [String: JSONValue]?
    }

    struct UpdateBody: Decodable {
        let email: String?
        let phone: String?
        let password: String?
        let data: [String: JSONValue]?
        let appMetadata: [String: JSONValue]?

        enum CodingKeys: String, CodingKey {
            case email, phone, password, data
            case appMetadata = "app_metadata"
        }
    }

    private func signup(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let body = try await RequestSupport.decode(SignupBody.self, from: request, limit: bodyLimit)
        guard (body.email ?? "").isEmpty, (body.phone ?? "").isEmpty else {
            throw GoTrueError(
                .unprocessableContent, code: "email_provider_disabled", message: "Email and phone signups are not supported by this gateway")
        }
        do {
            try MetadataLimit.check(body.data ?? [:], limit: users.maxUserMetadata, name: "user_metadata")
            return RequestSupport.json(
                text: GoTrueJSON.sessionText(
                    try await accounts.signUpAnonymously(
                        data: body.data ?? [:], device: RequestSupport.device(request, context, trustedProxies: trustedProxies), now: Date()),
                    users: userTexts))
        } catch let error as AuthGateError {
            throw ErrorMapping.clientError(for: error, in: .signup)
        }
    }

    private func currentUser(_ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let (user, identities) = try await accounts.profile(of: caller)
        return RequestSupport.json(text: userTexts.text(user, identities: identities))
    }

    private func updateUser(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        if let userUpdateLimit {
            try await RateLimitMiddleware.enforce(limiter, bucket: "user_update", key: caller.user.id, limit: userUpdateLimit, logger: context.logger)
        }
        let body = try await RequestSupport.decode(UpdateBody.self, from: request, limit: bodyLimit)
        if body.appMetadata != nil { throw GoTrueError(.forbidden, code: "not_admin", message: "Updating app_metadata requires admin privileges") }
        if body.email != nil || body.phone != nil || body.password != nil {
            throw GoTrueError(
                .unprocessableContent, code: "validation_failed",
                message: "Updating email, phone or password is not supported by this gateway; sign in with a provider")
        }
        do {
            let (user, identities) = try await accounts.updateMetadata(of: caller, data: body.data ?? [:], limit: users.maxUserMetadata, now: Date())
            // As written is as read (dates at the stored millisecond): kept for the next GET /user.
            return RequestSupport.json(text: userTexts.text(user, identities: identities))
        } catch let error as AuthGateError {
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
    }

    private func logout(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let scopeText = request.uri.queryParameters.get("scope") ?? "global"
        guard let scope = AccountService.LogoutScope(rawValue: scopeText.isEmpty ? "global" : scopeText) else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: ClientText.unsupportedLogoutScope(scopeText).text)
        }
        do {
            try await accounts.logout(caller, scope: scope, now: Date())
        } catch let error as AuthGateError {
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
        return Response(status: .noContent)
    }

    private func settings() throws -> Response {
        var external: [String: JSONValue] = [:]
        for name in [
            "apple", "azure", "bitbucket", "discord", "facebook", "snapchat", "figma", "fly", "github", "gitlab", "google", "keycloak", "kakao",
            "linkedin", "linkedin_oidc", "notion", "spotify", "slack", "slack_oidc", "workos", "twitch", "twitter", "email", "phone", "zoom"
        ] {
            external[name] = false
        }
        external["apple"] = .bool(providers.apple.enabled)
        external["google"] = .bool(providers.google.enabled)
        external["anonymous_users"] = .bool(providers.anonymous.enabled)
        for provider in providers.oidc where provider.enabled { external[provider.name] = true }
        return try RequestSupport.json([
            "external": .object(external), "disable_signup": .bool(users.disableSignup), "mailer_autoconfirm": false, "phone_autoconfirm": false,
            "sms_provider": "", "saml_enabled": false, "saml_private_key_next_configured": false, "passkeys_enabled": false
        ])
    }
}
