public import AuthGateCore
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `GET /auth/v1/admin/audit` (GoTrue's path, `service_role`): the audit trail, newest first, in
/// GoTrue's entry shape (`id`, `payload` with `action`, `actor_id`, `log_type`, `traits`,
/// `created_at`, `ip_address`), paged with `page` and `per_page`; AuthGate adds `user_id` and
/// `since` (Unix seconds) filters and the `request_id` in each entry's traits.
public struct AdminAuditController: Sendable {
    let store: any AuthStore
    let accounts: AccountService
    let adminRoles: Set<String>

    public init(store: any AuthStore, accounts: AccountService, adminRoles: [String]) {
        self.store = store
        self.accounts = accounts
        self.adminRoles = Set(adminRoles)
    }

    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .admin(roles: adminRoles)))
            .get("/auth/v1/admin/audit") { request, _ in try await list(request) }
    }

    private func list(_ request: Request) async throws -> Response {
        let parameters = request.uri.queryParameters
        let page = try AdminPage(parameters)
        guard let offset = page.offset, offset <= AuditQuery.scanLimit else { return try RequestSupport.json(value: .array([])) }
        var since: Date?
        if let text = parameters["since"] {
            guard let date = AuditQuery.since(unixSeconds: text) else {
                throw GoTrueError(.badRequest, code: "validation_failed", message: "since must be Unix seconds")
            }
            since = date
        }
        // A user id in its one form (lower case, as stored), so an upper-case copy finds the events.
        var userID: String?
        if let text = parameters["user_id"], !text.isEmpty {
            guard let canonical = AuditQuery.userID(String(text)) else {
                throw GoTrueError(.badRequest, code: "validation_failed", message: "user_id must be a user id (a UUID)")
            }
            userID = canonical
        }
        let events: [AuditEvent]
        do {
            events = try await store.auditEvents(AuditQuery(userID: userID, since: since, offset: offset, limit: page.perPage))
        } catch let error as AuthGateError {
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
        return try RequestSupport.json(value: .array(events.map { .object(Self.entry($0)) }))
    }

    /// One event in GoTrue's audit entry shape.
    public static func entry(_ event: AuditEvent) -> [String: JSONValue] {
        var traits: [String: JSONValue] = event.detail.mapValues { .string($0) }
        if let userID = event.userID { traits["user_id"] = .string(userID) }
        if let requestID = event.requestID { traits["request_id"] = .string(requestID) }
        return [
            "id": .string(event.id ?? ""),
            "payload": .object([
                "action": .string(event.action), "actor_id": .string(event.actor), "log_type": .string(logType(event.action)),
                "traits": .object(traits)
            ]),
            "created_at": GoTrueJSON.timestamp(event.at),
            "ip_address": .string(event.ip ?? "")
        ]
    }

    /// GoTrue's `log_type` family for an action.
    static func logType(_ action: String) -> String {
        switch action {
        case "login", "logout", "token_revoked", "session_revoked", "user_signed_out_everywhere": "token"
        case "user_signedup", "identity_linked", "identity_unlinked": "account"
        case "provider_token_revoked", "provider_revocation_failed": "provider"
        default: "user"
        }
    }
}
