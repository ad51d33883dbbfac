public import AuthGateCore
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// GoTrue's browser redirect flow over HTTP: `GET /auth/v1/authorize` (302 to Google or Apple),
/// `GET` and `POST /auth/v1/callback` (Google's query, Apple's form post; 302 or 303 back to the
/// app). `POST /token?grant_type=pkce` is the ``TokenController``'s. Every redirect is
/// `Cache-Control: no-store`: its `Location` may carry a session or a code.
public struct BrowserFlowController: Sendable {
    let service: BrowserFlowService
    /// Who may name the client's address in `X-Forwarded-For` (for the session's device).
    let trustedProxies: [IPNetwork]
    /// `security.manual_linking_enabled`: `GET /user/identities/authorize` answers 404 without it.
    let manualLinkingEnabled: Bool

    public init(service: BrowserFlowService, trustedProxies: [IPNetwork], manualLinkingEnabled: Bool) {
        self.service = service
        self.trustedProxies = trustedProxies
        self.manualLinkingEnabled = manualLinkingEnabled
    }

    /// Registers `/authorize` on `authorize` (rate-limited: each call stores a flow), the
    /// callback on `callback`, and `/user/identities/authorize` on `authorize` behind the bearer
    /// check of `accounts`.
    public func register(
        authorize: some RouterMethods<AuthGateRequestContext>, callback: some RouterMethods<AuthGateRequestContext>, accounts: AccountService
    ) {
        authorize.get("/auth/v1/authorize") { request, context in try await self.authorize(request, context: context, linking: false) }
        authorize.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .user))
            .get("/auth/v1/user/identities/authorize") { request, context in try await self.authorize(request, context: context, linking: true) }
        callback.get("/auth/v1/callback") { request, context in await self.callback(request, context: context, form: nil) }
        callback.post("/auth/v1/callback") { request, context in
            await self.callback(request, context: context, form: try? await Self.formBody(request))
        }
    }

    /// `/authorize`, or with `linking` GoTrue's `/user/identities/authorize` (the caller's account
    /// gets the identity; `skip_http_redirect=true` answers 200 `{"url"}` instead of the 302).
    private func authorize(_ request: Request, context: AuthGateRequestContext, linking: Bool) async throws -> Response {
        var linkingTo: String?
        if linking {
            linkingTo = try context.requireCaller().user.id
            guard manualLinkingEnabled else {
                throw GoTrueError(.notFound, code: "manual_linking_disabled", message: "Manual linking is disabled")
            }
        }
        let query: FormFields
        do {
            query = try FormFields(parsing: request.uri.query ?? "")
        } catch {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "The query string is not a valid form")
        }
        if (try? query.nonEmpty("invite_token")) != nil {
            // No invitations are made here, so no invite token is known (GoTrue's answer for an unknown one).
            throw GoTrueError(.notFound, code: "user_not_found", message: "User identified by token not found")
        }
        do {
            let started = try await service.authorize(
                query, redirectHeader: request.headers[Self.redirectToHeader], referer: request.headers[.referer], linkingTo: linkingTo, now: Date())
            if linking, (try? query.single("skip_http_redirect")) == "true" {
                var response = try RequestSupport.json(["url": .string(started.location)])
                response.headers[.cacheControl] = "no-store"
                return response
            }
            return Self.redirect(status: .found, location: started.location, setCookie: started.setCookie)
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            throw ErrorMapping.clientError(for: error, in: .signup)
        }
    }

    /// The callback's fields: the form of a `POST` (nil when it was not a form), else the query.
    private func callback(_ request: Request, context: AuthGateRequestContext, form: FormFields?) async -> Response {
        let fields: FormFields
        if request.method == .post {
            fields = form ?? FormFields()
        } else {
            fields = (try? FormFields(parsing: request.uri.query ?? "")) ?? FormFields()
        }
        let redirect = await service.callback(
            fields, cookies: request.headers[values: .cookie], device: RequestSupport.device(request, context, trustedProxies: trustedProxies),
            now: Date())
        GatewayMetrics.browserFlowCallback(outcome: redirect.outcome)
        if let userID = redirect.userID { context.outcome.userID = userID }
        if redirect.outcome != "ok" { context.outcome.reason = redirect.outcome }
        return Self.redirect(status: redirect.status == 303 ? .seeOther : .found, location: redirect.location, setCookie: redirect.clearCookie)
    }

    /// GoTrue reads a `redirect_to` header before the query's.
    static let redirectToHeader = HTTPField.Name.constant("redirect_to")

    /// A form body (`application/x-www-form-urlencoded`, 16 KiB at most).
    static func formBody(_ request: Request) async throws -> FormFields {
        var request = request
        let buffer = try await request.collectBody(upTo: FormFields.maximumBytes)
        return try FormFields(parsing: String(decoding: buffer.readableBytesView, as: UTF8.self))
    }

    static let referrerPolicy = HTTPField.Name.constant("Referrer-Policy")

    /// A redirect that no cache keeps and whose `Location` no page it leads to sees as referrer,
    /// setting or clearing a flow's cookie.
    static func redirect(status: HTTPResponse.Status, location: String, setCookie: String? = nil) -> Response {
        var headers: HTTPFields = [.location: location, .cacheControl: "no-store", referrerPolicy: "no-referrer"]
        if let setCookie { headers[.setCookie] = setCookie }
        return Response(status: status, headers: headers)
    }
}
