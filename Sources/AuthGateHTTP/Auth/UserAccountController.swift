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
public struct UserAccountController: Sendable {
    let accounts: AccountService
    let users: UsersConfiguration
    let security: SecurityConfiguration

    public init(accounts: AccountService, configuration: AuthGateConfiguration) {
        self.accounts = accounts
        self.users = configuration.users
        self.security = configuration.security
    }

    public func register(on router: Router<AuthGateRequestContext>) {
        let authenticated = router.group().add(middleware: BearerAuthenticator(accounts: accounts, requirement: .user))
        authenticated.delete("/auth/v1/user") { _, context in try await deleteSelf(context) }
        authenticated.delete("/auth/v1/user/identities/:identity_id") { _, context in try await unlink(context) }
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
        guard let identityID = context.parameters.get("identity_id").flatMap({ UUID(uuidString: $0) })?.uuidString.lowercased() else {
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
}
