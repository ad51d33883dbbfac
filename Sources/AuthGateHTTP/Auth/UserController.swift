#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import AuthGateCore
public import Hummingbird

/// `POST /signup` (anonymous), `GET`/`PUT /user`, `POST /logout`, `GET /settings`.
public struct UserController: Sendable {
    let accounts: AccountService
    let providers: ProvidersConfiguration

    public init(accounts: AccountService, providers: ProvidersConfiguration) {
        self.accounts = accounts
        self.providers = providers
    }

    public func register(on router: Router<AuthGateRequestContext>) {
        router.post("/auth/v1/signup") { request, _ in try await signup(request) }
        router.get("/auth/v1/user") { request, context in try await currentUser(request, context) }
        router.put("/auth/v1/user") { request, context in try await updateUser(request, context) }
        router.post("/auth/v1/logout") { request, context in try await logout(request, context) }
        router.get("/auth/v1/settings") { _, _ in try settings() }
    }

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

    private func signup(_ request: Request) async throws -> Response {
        let body = try await RequestSupport.decode(SignupBody.self, from: request)
        guard (body.email ?? "").isEmpty, (body.phone ?? "").isEmpty else {
            throw GoTrueError(.unprocessableContent, code: "email_provider_disabled", message: "Email and phone signups are not supported by this gateway")
        }
        do {
            return try RequestSupport.json(GoTrueJSON.session(try await accounts.signUpAnonymously(data: body.data ?? [:], now: Date())))
        } catch let error as AuthGateError {
            throw ErrorMapping.clientError(for: error, in: .signup)
        }
    }

    /// The caller, recorded on the request's access line.
    private func authenticated(_ request: Request, _ context: AuthGateRequestContext) async throws -> AuthenticatedUser {
        guard let bearer = RequestSupport.bearerToken(request) else { throw RequestSupport.missingBearer }
        do {
            let caller = try await accounts.authenticate(bearer: bearer, now: Date())
            context.outcome.userID = caller.user.id
            return caller
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
    }

    private func currentUser(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let caller = try await authenticated(request, context)
        let (user, identities) = try await accounts.profile(of: caller)
        return try RequestSupport.json(GoTrueJSON.user(user, identities: identities))
    }

    private func updateUser(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let caller = try await authenticated(request, context)
        let body = try await RequestSupport.decode(UpdateBody.self, from: request)
        if body.appMetadata != nil { throw GoTrueError(.forbidden, code: "not_admin", message: "Updating app_metadata requires admin privileges") }
        if body.email != nil || body.phone != nil || body.password != nil {
            throw GoTrueError(.unprocessableContent, code: "validation_failed", message: "Updating email, phone or password is not supported by this gateway; sign in with a provider")
        }
        do {
            let (user, identities) = try await accounts.updateMetadata(of: caller, data: body.data ?? [:], now: Date())
            return try RequestSupport.json(GoTrueJSON.user(user, identities: identities))
        } catch let error as AuthGateError {
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
    }

    private func logout(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let caller = try await authenticated(request, context)
        let scopeText = request.uri.queryParameters.get("scope") ?? "global"
        guard let scope = AccountService.LogoutScope(rawValue: scopeText.isEmpty ? "global" : scopeText) else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Unsupported logout scope \"\(scopeText)\"")
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
            "linkedin", "linkedin_oidc", "notion", "spotify", "slack", "slack_oidc", "workos", "twitch", "twitter", "email", "phone", "zoom",
        ] {
            external[name] = false
        }
        external["apple"] = .bool(providers.apple.enabled)
        external["google"] = .bool(providers.google.enabled)
        external["anonymous_users"] = .bool(providers.anonymous.enabled)
        for provider in providers.oidc where provider.enabled { external[provider.name] = true }
        return try RequestSupport.json([
            "external": .object(external), "disable_signup": false, "mailer_autoconfirm": false, "phone_autoconfirm": false,
            "sms_provider": "", "saml_enabled": false, "saml_private_key_next_configured": false, "passkeys_enabled": false,
        ])
    }
}
