public import Logging

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Acts on Apple's server-to-server notifications, each once (by `jti`):
/// - `consent-revoked`: the user owning that Apple identity is signed out everywhere;
/// - `account-delete` (or `account-deleted`): the user is deleted as by its own
///   `DELETE /auth/v1/user` (hard or soft per `users.self_delete`), Apple not called back;
/// - `email-disabled` / `email-enabled`: the identity's email data records it;
/// - anything else is logged and acknowledged.
public struct AppleNotificationService: Sendable {
    /// What was done.
    public enum Outcome: String, Sendable {
        case signedOut = "signed_out"
        case identityRemoved = "identity_removed"
        case userDeleted = "user_deleted"
        case emailUpdated = "email_updated"
        case unknownUser = "unknown_user"
        case ignored
    }

    private let verifier: AppleNotificationVerifier
    private let store: any AuthStore
    private let admin: AdminService
    private let logger: Logger
    private let selfDelete: UsersConfiguration.SelfDeleteMode

    /// - Parameter selfDelete: what `account-delete` does to the user (`users.self_delete`).
    public init(verifier: AppleVerifier, store: any AuthStore, selfDelete: UsersConfiguration.SelfDeleteMode = .hard, logger: Logger) {
        self.selfDelete = selfDelete
        self.verifier = AppleNotificationVerifier(verifier: verifier)
        self.store = store
        self.admin = AdminService(store: store, logger: logger)
        self.logger = logger
    }

    /// Verifies `payload` and acts on it.
    /// - Throws: ``AuthGateError``: the verification reason, or `replayed` for a notification
    ///   already acted on. Nothing changes when it throws.
    public func handle(_ payload: String, now: Date) async throws -> (AppleNotification, Outcome) {
        let notification = try await verifier.verify(payload, now: now)
        let hashed = NonceRule.hashed(notification.id)
        let handled = "apple-notification:\(hashed)"
        let inProgress = "apple-notification-claim:\(hashed)"
        // Marked handled only once its work is done: a failure half-way leaves it unmarked, so
        // Apple's retry does the work (each step is safe to repeat). While one request works on
        // it, a duplicate is answered 503 (Apple retries) rather than acknowledged.
        guard try await !store.contains(handled) else {
            throw AuthGateError(.replayed, "notification \(notification.id) was already handled")
        }
        guard try await store.insertIfAbsent(inProgress, expiresAt: Date().addingTimeInterval(60)) else {
            throw AuthGateError(.storeUnavailable, "notification \(notification.id) is being handled by another request")
        }
        let outcome: Outcome
        do {
            var audit = AuditContext.current
            audit.actor = "apple"
            outcome = try await AuditContext.$current.withValue(audit) { try await act(on: notification, now: now) }
            // Kept until the notification can no longer verify (its exp plus leeway), and at least
            // ten minutes of the store's own clock (which `now`, pinned in tests, may not be).
            let forgetAt = max(notification.expiresAt, Date()).addingTimeInterval(600)
            _ = try await store.insertIfAbsent(handled, expiresAt: forgetAt)
        } catch {
            _ = try? await store.consume(inProgress)
            throw error
        }
        _ = try? await store.consume(inProgress)
        logger.notice(
            "apple notification",
            metadata: ["gw.event": "\(notification.type)", "gw.outcome": "\(outcome.rawValue)", "gw.apple_sub": "\(notification.subject)"]
        )
        return (notification, outcome)
    }

    private func act(on notification: AppleNotification, now: Date) async throws -> Outcome {
        let known = [
            AppleNotification.consentRevoked, AppleNotification.accountDelete, AppleNotification.emailDisabled, AppleNotification.emailEnabled
        ]
        guard known.contains(notification.type) else { return .ignored }
        guard let userID = try await store.owner(ofIdentity: "apple", subject: notification.subject) else { return .unknownUser }
        switch notification.type {
        case AppleNotification.consentRevoked:
            _ = try await admin.signOutEverywhere(userID, reason: "apple_consent_revoked", now: now)
            return .signedOut
        case AppleNotification.accountDelete:
            // The path of a user's own deletion (`DELETE /auth/v1/user`, `users.self_delete`),
            // without calling Apple back: its tokens are dropped; other providers' are revoked.
            _ = try await admin.deleteUser(userID, soft: selfDelete == .soft, notRevoking: ["apple"], now: now)
            return .userDeleted
        default:
            guard
                var identity = try await store.identities(ofUser: userID).first(where: {
                    $0.key == IdentityKey(provider: "apple", subject: notification.subject)
                })
            else {
                return .unknownUser
            }
            identity.identityData["email_disabled"] = .bool(notification.type == AppleNotification.emailDisabled)
            if let email = notification.email { identity.identityData["email"] = .string(email) }
            if let isPrivate = notification.isPrivateEmail { identity.identityData["is_private_email"] = .bool(isPrivate) }
            identity.updatedAt = now
            // A field-level update: an identity removed meanwhile is not brought back.
            guard try await store.updateIdentity(identity) else { return .unknownUser }
            return .emailUpdated
        }
    }
}
