public import AuthGateCore
import HTTPTypes
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// GoTrue's admin API where GoTrue has one (`GET /admin/users` with `page`/`per_page`,
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
    public func register(on router: Router<AuthGateRequestContext>) {
        let group = router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .admin(roles: adminRoles)))
        group.get("/auth/v1/admin/users") { request, _ in try await listUsers(request) }
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
        if let banDuration = body.banDuration, banDuration != "none" {
            // At most about a century (ConfigurationValueParsers.maximumDuration); longer, or any
            // other spelling, is refused rather than overflowing a date.
            guard let duration = ConfigurationValueParsers.duration(banDuration), duration > .zero else {
                throw GoTrueError(
                    .badRequest, code: "validation_failed", message: "invalid format for ban duration: \(ProviderKeySet.printable(banDuration))")
            }
            banLength = duration
        }
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
