public import AuthGateCore
public import Hummingbird
import Logging
import Tracing

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/v1/token?grant_type=id_token|refresh_token`, in GoTrue's order of checks and with
/// its error texts (`internal/api/token.go`, `token_oidc.go`, `token_refresh.go`).
public struct TokenController: Sendable {
    let accounts: AccountService
    /// Who may name the client's address in `X-Forwarded-For` (for the session's device).
    let trustedProxies: [IPNetwork]
    /// The users of token answers, as JSON text already written.
    let users: UserTextCache
    /// The browser flow, for `grant_type=pkce`; nil when `browser_flow` is off.
    let browserFlow: BrowserFlowService?

    public init(accounts: AccountService, trustedProxies: [IPNetwork] = [], users: UserTextCache, browserFlow: BrowserFlowService? = nil) {
        self.accounts = accounts
        self.trustedProxies = trustedProxies
        self.users = users
        self.browserFlow = browserFlow
    }

    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.post("/auth/v1/token") { request, context in try await token(request, context: context) }
    }

    /// The token endpoint's body (both grants), read without Codable: it is the hottest body.
    struct IDTokenBody {
        let idToken: String?
        let provider: String?
        let nonce: String?
        /// The provider's access token, checked against the ID token's `at_hash`.
        let accessToken: String?
        let linkIdentity: Bool?
        let clientID: String?
        let issuer: String?
        let refreshToken: String?
        /// Apple's `authorizationCode` from the app (an AuthGate extension; GoTrue ignores it).
        let authorizationCode: String?
        /// `grant_type=pkce`: the browser flow's code and the verifier of its challenge.
        let authCode: String?
        let codeVerifier: String?

        init(_ body: JSONBody) throws {
            idToken = try body.string("id_token")
            provider = try body.string("provider")
            nonce = try body.string("nonce")
            accessToken = try body.string("access_token")
            linkIdentity = try body.bool("link_identity")
            clientID = try body.string("client_id")
            issuer = try body.string("issuer")
            refreshToken = try body.string("refresh_token")
            authorizationCode = try body.string("authorization_code")
            authCode = try body.string("auth_code")
            codeVerifier = try body.string("code_verifier")
        }

        static func read(_ request: Request) async throws -> IDTokenBody {
            try IDTokenBody(try await RequestSupport.object(from: request, limit: RequestSupport.tokenBodyBytes))
        }
    }

    private func token(_ request: Request, context: AuthGateRequestContext) async throws -> Response {
        switch request.uri.queryParameters.get("grant_type") {
        case "id_token":
            return try await idTokenGrant(request, context: context)
        case "refresh_token":
            return try await refreshGrant(request, context: context)
        case "pkce" where browserFlow != nil:
            return try await pkceGrant(request, context: context)
        default:
            throw GoTrueError(.badRequest, code: "invalid_credentials", message: "unsupported_grant_type")
        }
    }

    private func idTokenGrant(_ request: Request, context: AuthGateRequestContext) async throws -> Response {
        let body = try await IDTokenBody.read(request)
        guard let idToken = body.idToken, !idToken.isEmpty else { throw OAuthError(error: "invalid request", description: "id_token required") }
        // GoTrue's deprecated form names no provider, but a client id and an issuer, which selects it.
        let provider = body.provider ?? ""
        let issuer = body.issuer ?? ""
        guard !provider.isEmpty || (!(body.clientID ?? "").isEmpty && !issuer.isEmpty) else {
            throw OAuthError(error: "invalid request", description: "provider or client_id and issuer required")
        }
        let now = Date()
        var linkTarget: AuthenticatedUser?
        if body.linkIdentity == true {
            guard let bearer = RequestSupport.bearerToken(request, context) else {
                throw OAuthError(error: "invalid request", description: "Linking requires a valid user access token in Authorization")
            }
            do {
                linkTarget = try await accounts.authenticate(bearer: bearer, now: now)
            } catch let error as AuthGateError {
                throw ErrorMapping.clientError(for: error, in: .authenticated)
            }
        }
        // The provider field is the client's: logs, spans and metrics get a configured name or "unknown".
        let label: String
        do {
            // After a linking caller is authenticated, as GoTrue resolves it.
            label = try accounts.resolveIDTokenProvider(named: provider, issuer: issuer)
        } catch let error as AuthGateError {
            throw refusedSignIn(error, provider: accounts.providerLabel(provider), context: context)
        }
        do {
            let issued = try await GatewaySpans.run("auth.sign_in") { span in
                span?.attributes["auth.provider"] = label
                return try await accounts.signInWithIDToken(
                    provider: label, idToken: idToken, rawNonce: body.nonce, accessToken: body.accessToken, issuer: issuer, linkingTo: linkTarget,
                    authorizationCode: body.authorizationCode.flatMap { $0.isEmpty ? nil : $0 },
                    device: RequestSupport.device(request, context, trustedProxies: trustedProxies), now: now)
            }
            GatewayMetrics.signIn(provider: label, outcome: "ok")
            context.outcome.userID = issued.user.id
            context.logger.info(
                "id_token sign-in",
                metadata: ["gw.provider": "\(label)", "gw.user_id": "\(issued.user.id)", "gw.linked": "\(linkTarget != nil)", "gw.outcome": "ok"]
            )
            // The user as written is the user as read (dates at the stored millisecond): its text
            // is kept for the session's first refresh and GET /user.
            return RequestSupport.json(text: GoTrueJSON.sessionText(issued, users: users))
        } catch let error as AuthGateError {
            throw refusedSignIn(error, provider: label, context: context)
        }
    }

    /// Counts and logs a refused id_token sign-in; the client's error for it.
    private func refusedSignIn(_ error: AuthGateError, provider label: String, context: AuthGateRequestContext) -> any Error {
        GatewayMetrics.signIn(provider: label, outcome: error.code.description)
        context.outcome.reason = error.code.description
        context.logger.notice(
            "id_token sign-in refused", metadata: ["gw.provider": "\(label)", "gw.outcome": "\(error.code)", "gw.reason": "\(error.message)"])
        return ErrorMapping.clientError(for: error, in: .idTokenGrant)
    }

    /// `grant_type=pkce` (GoTrue's `token.go` `PKCE`): the browser flow's code and verifier for
    /// the session, with the provider's tokens when AuthGate kept them.
    private func pkceGrant(_ request: Request, context: AuthGateRequestContext) async throws -> Response {
        guard let browserFlow else { throw GoTrueError(.badRequest, code: "invalid_credentials", message: "unsupported_grant_type") }
        let body = try await IDTokenBody.read(request)
        do {
            let exchanged = try await GatewaySpans.run("auth.pkce") { _ in
                try await browserFlow.exchange(
                    authCode: body.authCode ?? "", verifier: body.codeVerifier ?? "",
                    device: RequestSupport.device(request, context, trustedProxies: trustedProxies), now: Date())
            }
            context.outcome.userID = exchanged.session.user.id
            context.logger.info("pkce exchange", metadata: ["gw.user_id": "\(exchanged.session.user.id)", "gw.outcome": "ok"])
            return RequestSupport.json(
                text: GoTrueJSON.sessionText(
                    exchanged.session, users: users, providerToken: exchanged.providerToken, providerRefreshToken: exchanged.providerRefreshToken))
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            context.logger.notice("pkce exchange refused", metadata: ["gw.outcome": "\(error.code)"])
            throw ErrorMapping.clientError(for: error, in: .refreshGrant)
        }
    }

    private func refreshGrant(_ request: Request, context: AuthGateRequestContext) async throws -> Response {
        let body = try await IDTokenBody.read(request)
        guard let refreshToken = body.refreshToken, !refreshToken.isEmpty else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Refresh token is not valid")
        }
        do {
            let issued = try await GatewaySpans.run("auth.refresh") { _ in try await accounts.refresh(refreshToken, now: Date()) }
            context.outcome.userID = issued.user.id
            return RequestSupport.json(text: GoTrueJSON.sessionText(issued, users: users))
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            context.logger.notice("refresh refused", metadata: ["gw.outcome": "\(error.code)"])
            throw ErrorMapping.clientError(for: error, in: .refreshGrant)
        }
    }
}
