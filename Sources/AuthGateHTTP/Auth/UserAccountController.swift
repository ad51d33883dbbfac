public import AuthGateCore
public import Hummingbird
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What a user does to their own account, behind ``BearerAuthenticator``:
/// - `DELETE /auth/v1/user` (AuthGate's; off unless `users.allow_self_delete`): the account is
///   deleted as `users.self_delete` says; 403 `reauthentication_needed` when the caller signed in
///   longer ago than `users.self_delete_max_auth_age`; 200 `{}`.
/// - `DELETE /auth/v1/user/identities/{identity_id}`: GoTrue's unlinking, in its order of
///   refusals (404 `manual_linking_disabled` unless `security.manual_linking_enabled`, 404
///   `validation_failed` for an id that is not a UUID, 422 `single_identity_not_deletable`, 422
///   `identity_not_found`, 422 `email_conflict_identity_not_deletable`); 200 `{}`.
/// - `GET /auth/v1/user/sessions` and `DELETE /auth/v1/user/sessions/{id}` (AuthGate's): the
///   caller's devices (user agent, IP, creation, last refresh, `aal`; the current one marked) and
///   ending one of them (404 `session_not_found` when it is not the caller's live session).
public struct UserAccountController: Sendable {
    let accounts: AccountService
    let users: UsersConfiguration
    let security: SecurityConfiguration

    public init(accounts: AccountService, configuration: AuthGateConfiguration) {
        self.accounts = accounts
        self.users = configuration.users
        self.security = configuration.security
    }

    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        let authenticated = router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .user))
        authenticated.delete("/auth/v1/user") { _, context in try await deleteSelf(context) }
        authenticated.delete("/auth/v1/user/identities/:identity_id") { _, context in try await unlink(context) }
        authenticated.get("/auth/v1/user/sessions") { _, context in try await sessions(context) }
        authenticated.delete("/auth/v1/user/sessions/:session_id") { _, context in try await endSession(context) }
    }

    private func sessions(_ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let sessions = try await accounts.sessions(of: caller)
        return try RequestSupport.json([
            "sessions": .array(
                sessions.map { session in
                    var object = GoTrueJSON.sessionRecord(session)
                    object["current"] = .bool(session.id == caller.claims.sessionID)
                    return .object(object)
                })
        ])
    }

    private func endSession(_ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        guard let sessionID = Self.uuid(context, "session_id"),
            try await accounts.endSession(of: caller, sessionID: sessionID, now: Date())
        else {
            throw GoTrueError(.notFound, code: "session_not_found", message: "Session not found")
        }
        return Response(status: .noContent)
    }

    private func deleteSelf(_ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        guard users.allowSelfDelete else {
            throw GoTrueError(.notFound, code: "self_delete_disabled", message: "Deleting your own account is disabled")
        }
        do {
            try await accounts.deleteSelf(caller, mode: users.selfDelete, maxAuthAge: users.selfDeleteMaxAuthAge, now: Date())
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
        return try RequestSupport.json([:])
    }

    private func unlink(_ context: AuthGateRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        guard security.manualLinkingEnabled else {
            throw GoTrueError(.notFound, code: "manual_linking_disabled", message: "Manual linking is disabled")
        }
        guard let identityID = Self.uuid(context, "identity_id") else {
            throw GoTrueError(.notFound, code: "validation_failed", message: "identity_id must be an UUID")
        }
        do {
            _ = try await accounts.unlinkIdentity(caller, identityID: identityID, now: Date())
        } catch let error as AuthGateError {
            context.outcome.reason = error.code.description
            throw ErrorMapping.clientError(for: error, in: .authenticated)
        }
        return try RequestSupport.json([:])
    }

    /// The path parameter `name` as a UUID in the stored (lower-case) form; nil when it is not one.
    private static func uuid(_ context: AuthGateRequestContext, _ name: String) -> String? {
        context.parameters.get(name).flatMap { UUID(uuidString: $0) }?.uuidString.lowercased()
    }
}
