#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// GoTrue's find-or-create and linking rules (`internal/models/linking.go`, `internal/api/external.go`,
/// `internal/api/token_oidc.go` for `link_identity`).
extension AccountService {
    /// The user an identity signs in as: its owner; or, for a new identity with a verified ASCII
    /// email, the user holding that email (automatic linking, ``EmailAddress``); or a new user.
    func findOrCreateUser(for identity: VerifiedIdentity, now: Date) async throws -> UserRecord {
        if let owner = try await store.owner(ofIdentity: identity.provider, subject: identity.subject) {
            return try await refreshExisting(identity, ownerID: owner, now: now)
        }
        if identity.emailVerified, let email = identity.email, EmailAddress.allowsAutomaticLinking(email),
            let holder = try await store.owner(ofEmail: email),
            let user = try await store.user(id: holder), user.deletedAt == nil
        {
            let owner = try await store.claimIdentity(provider: identity.provider, subject: identity.subject, userID: user.id)
            return try await refreshExisting(identity, ownerID: owner, now: now)
        }
        let newID = UUIDBytes.random()
        let owner = try await store.claimIdentity(provider: identity.provider, subject: identity.subject, userID: newID)
        guard owner == newID else {
            // A concurrent first sign-in with the same identity won; use its user.
            return try await refreshExisting(identity, ownerID: owner, now: now)
        }
        var email: String?
        if identity.emailVerified, let candidate = identity.email, try await store.claimEmail(candidate, userID: newID) == newID {
            email = candidate
        }
        var user = UserRecord(
            id: newID, aud: tokens.audience, role: "authenticated", email: email, phone: nil, emailConfirmedAt: email == nil ? nil : now,
            appMetadata: [:], userMetadata: [:], isAnonymous: false, createdAt: now, updatedAt: now, lastSignInAt: now, bannedUntil: nil
        )
        try await store.saveIdentity(newIdentity(identity, userID: newID, now: now))
        user.userMetadata = Self.merged(user.userMetadata, with: identity.identityData)
        user.appMetadata = try await appMetadata(for: user)
        return user
    }

    /// `link_identity: true`: attaches the identity to the caller's user (the anonymous upgrade).
    /// Every condition is checked before anything is written: a refused link changes nothing.
    func link(_ identity: VerifiedIdentity, to target: UserRecord, now: Date) async throws -> UserRecord {
        if let owner = try await store.owner(ofIdentity: identity.provider, subject: identity.subject) {
            throw owner == target.id
                ? AuthGateError(.identityAlreadyExists, "identity already linked to this user", clientText: .fixed("Identity is already linked"))
                : AuthGateError(.identityAlreadyExists, "identity linked to another user")
        }
        var emailToClaim: String?
        if target.email == nil, let email = identity.email {
            guard identity.emailVerified else {
                throw AuthGateError(
                    .emailNotConfirmed, "the \(identity.provider) email is not verified", clientText: .unverifiedEmail(provider: identity.provider)
                )
            }
            if let holder = try await store.owner(ofEmail: email), holder != target.id {
                throw AuthGateError(.emailExists, "A user with this email address has already been registered")
            }
            emailToClaim = email
        }
        let owner = try await store.claimIdentity(provider: identity.provider, subject: identity.subject, userID: target.id)
        guard owner == target.id else { throw AuthGateError(.identityAlreadyExists, "Identity is already linked to another user") }
        var user = target
        if let email = emailToClaim {
            guard try await store.claimEmail(email, userID: user.id) == user.id else {
                // Taken meanwhile by a concurrent sign-in: undo the claim, so nothing changed.
                try await store.deleteIdentity(provider: identity.provider, subject: identity.subject, userID: user.id)
                throw AuthGateError(.emailExists, "A user with this email address has already been registered")
            }
            user.email = email
            user.emailConfirmedAt = now
        }
        try await store.saveIdentity(newIdentity(identity, userID: target.id, now: now))
        user.userMetadata = Self.merged(user.userMetadata, with: identity.identityData)
        if user.email != nil, user.emailConfirmedAt != nil { user.isAnonymous = false }
        user.appMetadata = try await appMetadata(for: user)
        user.updatedAt = now
        return user
    }

    private func refreshExisting(_ identity: VerifiedIdentity, ownerID: String, now: Date) async throws -> UserRecord {
        guard var user = try await store.user(id: ownerID) else {
            throw AuthGateError(.storeCorrupt, "identity \(identity.provider) belongs to a user that does not exist")
        }
        let existing = try await store.identities(ofUser: ownerID).first { $0.provider == identity.provider && $0.subject == identity.subject }
        var record = existing ?? newIdentity(identity, userID: ownerID, now: now)
        record.identityData = identity.identityData
        record.email = identity.email
        record.updatedAt = now
        record.lastSignInAt = now
        try await store.saveIdentity(record)
        user.userMetadata = Self.merged(user.userMetadata, with: identity.identityData)
        user.appMetadata = try await appMetadata(for: user)
        return user
    }

    private func newIdentity(_ identity: VerifiedIdentity, userID: String, now: Date) -> IdentityRecord {
        IdentityRecord(
            identityID: UUIDBytes.random(), userID: userID, provider: identity.provider, subject: identity.subject,
            identityData: identity.identityData, email: identity.email, createdAt: now, updatedAt: now, lastSignInAt: now
        )
    }

    /// `provider` is the oldest identity's provider; `providers` the distinct list in creation order.
    private func appMetadata(for user: UserRecord) async throws -> [String: JSONValue] {
        var metadata = user.appMetadata
        let identities = try await store.identities(ofUser: user.id)
        var providers: [String] = []
        for identity in identities where !providers.contains(identity.provider) { providers.append(identity.provider) }
        guard let first = providers.first else { return metadata }
        metadata["provider"] = .string(first)
        metadata["providers"] = .array(providers.map { .string($0) })
        return metadata
    }

    /// A shallow merge where `null` deletes (GoTrue's `user_metadata` update rule).
    static func merged(_ base: [String: JSONValue], with update: [String: JSONValue]) -> [String: JSONValue] {
        var result = base
        for (key, value) in update {
            if value == .null { result.removeValue(forKey: key) } else { result[key] = value }
        }
        return result
    }
}
