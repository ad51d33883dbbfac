public import AuthGateCore
import HTTPTypes
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// GoTrue's admin API where GoTrue has one (`GET /admin/users` with `page`/`per_page`,
/// `POST /admin/users` with an email (no password or phone: AuthGate keeps neither),
/// `GET`/`PUT`/`DELETE /admin/users/{id}` with `ban_duration` and `should_soft_delete`), plus
/// `GET /admin/users/{id}/sessions` and `DELETE /admin/sessions/{id}`.
///
/// Callers present an access token signed by our keys whose `role` is one of
/// `tokens.admin_roles` (GoTrue's rule; `authgate tokens service-role` mints one): 401 without a
/// valid token, 403 `not_admin` for any other role. Bans and deletions end the user's sessions and
/// go on the revocation stream, so the proxy refuses the user's tokens at once, not at expiry.
public struct AdminController: Sendable {
    let admin: AdminService
    let accounts: AccountService
    let adminRoles: Set<String>
    let users: UsersConfiguration

    public init(admin: AdminService, accounts: AccountService, adminRoles: [String], users: UsersConfiguration) {
        self.admin = admin
        self.accounts = accounts
        self.adminRoles = Set(adminRoles)
        self.users = users
    }

    /// Every admin endpoint sits behind ``BearerAuthenticator`` (`.admin`).
    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        let group = router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .admin(roles: adminRoles)))
        group.get("/auth/v1/admin/users") { request, _ in try await listUsers(request) }
        group.post("/auth/v1/admin/users") { request, _ in try await createUser(request) }
        group.get("/auth/v1/admin/users/:id") { _, context in try await showUser(context) }
        group.put("/auth/v1/admin/users/:id") { request, context in try await updateUser(request, context) }
        group.delete("/auth/v1/admin/users/:id") { request, context in try await deleteUser(request, context) }
        group.get("/auth/v1/admin/users/:id/sessions") { _, context in try await listSessions(context) }
        group.delete("/auth/v1/admin/sessions/:id") { _, context in try await revokeSession(context) }
    }

    /// GoTrue's paging headers, made once.
    static let totalCountHeader = HTTPField.Name.constant("X-Total-Count")
    static let linkHeader = HTTPField.Name.constant("Link")

    private func listUsers(_ request: Request) async throws -> Response {
        let paging = try AdminPage(request.uri.queryParameters)
        let (page, perPage) = (paging.page, paging.perPage)
        // A page past the end is empty, however far (and never an overflow).
        let (users, total) = try await admin.users(offset: paging.offset ?? Int.max, limit: perPage)
        var objects: [JSONValue] = []
        for user in users { objects.append(.object(GoTrueJSON.user(user, identities: try await admin.identities(of: user.id)))) }
        var response = try RequestSupport.json(["users": .array(objects), "aud": .string(users.first?.aud ?? "authenticated")])
        response.headers[Self.totalCountHeader] = String(total)
        let lastPage = max(1, (total + perPage - 1) / perPage)
        var links: [String] = []
        if page < lastPage { links.append("</admin/users?page=\(page + 1)&per_page=\(perPage)>; rel=\"next\"") }
        links.append("</admin/users?page=\(lastPage)&per_page=\(perPage)>; rel=\"last\"")
        response.headers[Self.linkHeader] = links.joined(separator: ", ")
        return response
    }

    private func showUser(_ context: AuthGateRequestContext) async throws -> Response {
        let user = try await existingUser(context)
        return try RequestSupport.json(GoTrueJSON.user(user, identities: try await admin.identities(of: user.id)))
    }

    struct CreateBody: Decodable {
        let email: String?
        let emailConfirm: Bool?
        let phone: String?
        let password: String?
        let passwordHash: String?
        let userMetadata: [String: JSONValue]?
        let appMetadata: [String: JSONValue]?
        let role: String?
        let banDuration: String?

        enum CodingKeys: String, CodingKey {
            case email, phone, password, role
            case emailConfirm = "email_confirm"
            case passwordHash = "password_hash"
            case userMetadata = "user_metadata"
            case appMetadata = "app_metadata"
            case banDuration = "ban_duration"
        }
    }

    /// `POST /admin/users`: a user with an email and no identity, which the first sign-in whose
    /// provider vouches for that email joins (an invitation, also with `users.disable_signup`).
    private func createUser(_ request: Request) async throws -> Response {
        let body = try await RequestSupport.decode(CreateBody.self, from: request, limit: users.maxUserMetadata + users.maxAppMetadata + 4096)
        guard [body.phone, body.password, body.passwordHash].allSatisfy({ ($0 ?? "").isEmpty }) else {
            throw GoTrueError(
                .badRequest, code: "validation_failed",
                message: "AuthGate keeps no passwords or phone numbers: users sign in with Apple, Google, OpenID Connect or anonymously")
        }
        guard let email = body.email, !email.isEmpty else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Cannot create a user without either an email or phone")
        }
        guard AdminUserFields.isEmail(email) else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Unable to validate email address: invalid format")
        }
        let role = body.role ?? "authenticated"
        guard AdminUserFields.isRole(role) else {
            throw GoTrueError(
                .badRequest, code: "validation_failed", message: "role must be 1 to 63 ASCII letters, digits, '_' or '-'")
        }
        let now = Date()
        var new = AdminService.NewUser(
            email: email, emailConfirmed: body.emailConfirm ?? false, userMetadata: body.userMetadata ?? [:],
            appMetadata: body.appMetadata ?? [:], role: role)
        if let banDuration = body.banDuration, banDuration != "none" {
            new.bannedUntil = now.addingTimeInterval(try Self.banLength(banDuration).inSeconds)
        }
        do {
            try MetadataLimit.check(new.userMetadata, limit: users.maxUserMetadata, name: "user_metadata")
            try MetadataLimit.check(new.appMetadata, limit: users.maxAppMetadata, name: "app_metadata")
            let user = try await admin.createUser(new, audience: accounts.audience, now: now)
            return try RequestSupport.json(GoTrueJSON.user(user, identities: []))
        } catch let error as AuthGateError where error.code == .emailExists {
            throw GoTrueError(.unprocessableContent, code: "email_exists", message: "A user with this email address has already been registered")
        } catch let error as AuthGateError where error.code == .validationFailed {
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
    }

    /// A `ban_duration` other than `none`: at most about a century
    /// (ConfigurationValueParsers.maximumDuration); longer, or any other spelling, is refused
    /// rather than overflowing a date.
    private static func banLength(_ banDuration: String) throws -> Duration {
        guard let duration = ConfigurationValueParsers.duration(banDuration), duration > .zero else {
            throw GoTrueError(
                .badRequest, code: "validation_failed", message: "invalid format for ban duration: \(ProviderKeySet.printable(banDuration))")
        }
        return duration
    }

    struct UpdateBody: Decodable {
        let banDuration: String?
        let userMetadata: [String: JSONValue]?
        let appMetadata: [String: JSONValue]?

        enum CodingKeys: String, CodingKey {
            case banDuration = "ban_duration"
            case userMetadata = "user_metadata"
            case appMetadata = "app_metadata"
        }
    }

    private func updateUser(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        var user = try await existingUser(context)
        let body = try await RequestSupport.decode(UpdateBody.self, from: request, limit: users.maxUserMetadata + users.maxAppMetadata + 4096)
        let now = Date()
        // The ban's length is parsed before anything is written: a bad one changes nothing.
        var banLength: Duration?
        if let banDuration = body.banDuration, banDuration != "none" { banLength = try Self.banLength(banDuration) }
        if body.userMetadata != nil || body.appMetadata != nil {
            do {
                // Applied to the stored user inside a compare-and-set, so nothing that lands
                // meanwhile (a ban, a sign-in) is overwritten.
                user =
                    try await admin.updateUser(user.id, now: now) { stored in
                        for (key, value) in body.userMetadata ?? [:] {
                            if value == .null { stored.userMetadata.removeValue(forKey: key) } else { stored.userMetadata[key] = value }
                        }
                        for (key, value) in body.appMetadata ?? [:] {
                            if value == .null { stored.appMetadata.removeValue(forKey: key) } else { stored.appMetadata[key] = value }
                        }
                        try MetadataLimit.check(stored.userMetadata, limit: users.maxUserMetadata, name: "user_metadata")
                        try MetadataLimit.check(stored.appMetadata, limit: users.maxAppMetadata, name: "app_metadata")
                    } ?? user
            } catch let error as AuthGateError where error.code == .validationFailed {
                throw ErrorMapping.clientError(for: error, in: .authenticated)
            }
        }
        if let banDuration = body.banDuration {
            if banDuration == "none" {
                user = try await admin.liftBan(user.id, now: now) ?? user
            } else if let duration = banLength {
                user = try await admin.ban(user.id, until: now.addingTimeInterval(duration.inSeconds), now: now) ?? user
            }
        }
        return try RequestSupport.json(GoTrueJSON.user(user, identities: try await admin.identities(of: user.id)))
    }

    struct DeleteBody: Decodable {
        let shouldSoftDelete: Bool?

        enum CodingKeys: String, CodingKey {
            case shouldSoftDelete = "should_soft_delete"
        }
    }

    private func deleteUser(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let user = try await existingUser(context)
        let body = try await RequestSupport.decode(DeleteBody.self, from: request, limit: 4096)
        _ = try await admin.deleteUser(user.id, soft: body.shouldSoftDelete ?? false, now: Date())
        return try RequestSupport.json([:])
    }

    private func listSessions(_ context: AuthGateRequestContext) async throws -> Response {
        let user = try await existingUser(context)
        let sessions = try await admin.sessions(of: user.id)
        return try RequestSupport.json(["sessions": .array(sessions.map { .object(GoTrueJSON.sessionRecord($0)) })])
    }

    private func revokeSession(_ context: AuthGateRequestContext) async throws -> Response {
        let sessionID = try context.parameters.require("id")
        guard try await admin.revokeSession(sessionID.lowercased(), now: Date()) != nil else {
            throw GoTrueError(.notFound, code: "session_not_found", message: "Session not found")
        }
        return try RequestSupport.json([:])
    }

    private func existingUser(_ context: AuthGateRequestContext) async throws -> UserRecord {
        let id = try context.parameters.require("id")
        guard let user = try await admin.findUser(id), user.id == id.lowercased() else {
            throw GoTrueError(.notFound, code: "user_not_found", message: "User not found")
        }
        return user
    }
}
