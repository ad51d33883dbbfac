#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// GoTrue's find-or-create and linking rules (`internal/models/linking.go`, `internal/api/external.go`,
/// `internal/api/token_oidc.go` for `link_identity`), as one read and one atomic write each.
extension AccountService {
    /// Signs in as the identity's owner; or, for a new identity with a verified ASCII email, as
    /// the user holding that email (automatic linking, ``EmailAddress``); or as a new user. One
    /// lookup and one commit (user, identity, indexes and session at once); when another request
    /// changed the account or claimed the identity meanwhile, it reads again and decides again.
    /// `marks` (the token's single use, not yet taken) are taken by the first lookup, before
    /// anything is read.
    func signIn(_ identity: VerifiedIdentity, taking marks: SingleUseMarks?, device: SessionDevice = .unknown, now: Date) async throws
        -> IssuedSession
    {
        let now = now.atStoredMillisecond
        let signedIn = try await commitSignIn(identity, taking: marks, startingSessionOn: device, now: now)
        return try issue(
            for: signedIn.user, identities: signedIn.identities, session: signedIn.session, refreshToken: signedIn.refreshToken, now: now)
    }

    /// What ``commitSignIn(_:taking:startingSessionOn:now:)`` wrote.
    struct SignedInAccount {
        let user: UserRecord
        let identities: [IdentityRecord]
        /// The session started with it, and its first refresh token.
        let session: SessionRecord
        let refreshToken: RefreshToken
    }

    /// The find-or-create of ``signIn(_:taking:device:now:)``, with a session on `device` in the
    /// same commit (the browser flow's callback and code exchange use it too).
    func commitSignIn(_ identity: VerifiedIdentity, taking marks: SingleUseMarks?, startingSessionOn device: SessionDevice, now: Date)
        async throws -> SignedInAccount
    {
        let linkableEmail = Self.linkableEmail(of: identity)
        var newUserMayClaimEmail = true
        for attempt in 0..<AccountRetry.attempts {
            let lookup = try await store.signInLookup(
                provider: identity.provider, subject: identity.subject, email: linkableEmail, taking: attempt == 0 ? marks : nil)
            let decided = try decide(identity, lookup: lookup, newUserMayClaimEmail: newUserMayClaimEmail, now: now)
            var started = decided.change
            let (session, refreshToken) = try newSession(for: started.user.id, method: "oauth", device: device, now: now)
            started.newSession = (session, refreshToken.hash)
            started.sessionLimit = tokens.refresh.maxSessionsPerUser
            switch try await store.commit(started) {
            case .committed(let ended):
                try await endedOverLimit(ended, userID: started.user.id, now: now)
                store.recordAudit(
                    .now(
                        started.base == nil ? "user_signedup" : "login", userID: started.user.id, actor: started.user.id,
                        detail: ["provider": identity.provider, "session_id": session.id]))
                return SignedInAccount(user: started.user, identities: decided.identities, session: session, refreshToken: refreshToken)
            case .stale, .identityTaken:
                continue  // the account changed, or a concurrent first sign-in won: decide again
            case .fenced:
                try await AccountRetry.backOff(attempt)  // an operator is banning or deleting the user
            case .emailTaken:
                newUserMayClaimEmail = false  // held by another user this identity may not link to
            }
        }
        throw AuthGateError(.storeUnavailable, "the account changed \(AccountRetry.attempts) times during one sign-in")
    }

    /// `link_identity: true`: attaches the identity to the caller's user (the anonymous upgrade)
    /// and starts a session, in one commit from the account read when the caller was
    /// authenticated. Every condition is checked before anything is written: a refused link
    /// changes nothing.
    func link(_ identity: VerifiedIdentity, to caller: AuthenticatedUser, device: SessionDevice = .unknown, now: Date) async throws -> IssuedSession {
        let now = now.atStoredMillisecond
        let linked = try await linkAccount(
            identity, userID: caller.user.id, sessionID: caller.claims.sessionID, startingFrom: caller.account, startingSessionOn: device, now: now)
        return try issue(for: linked.user, identities: linked.identities, session: linked.session, refreshToken: linked.refreshToken, now: now)
    }

    /// The link of ``link(_:to:device:now:)`` for the user `userID`: from `first` (the account read
    /// when the caller was authenticated) or a fresh read, with the caller's session `sessionID`
    /// required alive when given, and a session on `device` in the same commit.
    func linkAccount(
        _ identity: VerifiedIdentity, userID: String, sessionID: String?, startingFrom first: AccountSnapshot?,
        startingSessionOn device: SessionDevice,
        now: Date
    ) async throws -> SignedInAccount {
        try await refuseIfHeldByAnother(identity, userID: userID)
        let (session, refreshToken) = try newSession(for: userID, method: "oauth", device: device, now: now)
        var identities: [IdentityRecord] = []
        let updated = try await store.updateAccount(userID: userID, sessionID: sessionID, startingFrom: first) { account in
            if sessionID != nil, account.session == nil {
                throw AuthGateError(.sessionNotFound, "Session from session_id claim in JWT does not exist")
            }
            var change: AccountChange
            (change, identities) = try linked(identity, to: account, now: now)
            change.newSession = (session, refreshToken.hash)
            change.sessionLimit = tokens.refresh.maxSessionsPerUser
            return change
        } onConflict: { outcome in
            switch outcome {
            case .identityTaken: AuthGateError(.identityAlreadyExists, "identity linked to another user")
            default: AuthGateError(.emailExists, "A user with this email address has already been registered")
            }
        }
        guard let updated else { throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist") }
        try await endedOverLimit(updated.endedSessions, userID: userID, now: now)
        store.recordAudit(.now("identity_linked", userID: userID, actor: userID, detail: ["provider": identity.provider, "session_id": session.id]))
        return SignedInAccount(user: updated.change.user, identities: identities, session: session, refreshToken: refreshToken)
    }

    /// The refusals the browser flow's code exchange would give now, read only, with `marks`
    /// taken: GoTrue resolves the account at its callback, so a sign-in it refuses there (signups
    /// closed, a banned user, a link its rules forbid) is refused in the callback's redirect rather
    /// than after the app has exchanged the code. The exchange decides again from what it reads.
    func checkSignIn(_ identity: VerifiedIdentity, linkingTo target: String?, taking marks: SingleUseMarks, now: Date) async throws {
        guard let target else {
            let lookup = try await store.signInLookup(
                provider: identity.provider, subject: identity.subject, email: Self.linkableEmail(of: identity), taking: marks)
            _ = try decide(identity, lookup: lookup, newUserMayClaimEmail: true, now: now)
            return
        }
        try await idTokens.take(marks)
        try await refuseIfHeldByAnother(identity, userID: target)
        guard let account = try await store.account(userID: target, sessionID: nil) else {
            throw AuthGateError(.userNotFound, "the linking target user does not exist")
        }
        _ = try linked(identity, to: account, now: now)
    }

    /// A verified email that automatic linking may follow to its user (``EmailAddress``).
    private static func linkableEmail(of identity: VerifiedIdentity) -> String? {
        guard identity.emailVerified, let email = identity.email, EmailAddress.allowsAutomaticLinking(email) else { return nil }
        return email
    }

    /// GoTrue's first refusal of a link: an identity held by another user is named before any
    /// email rule (the commit checks the claim again, atomically).
    private func refuseIfHeldByAnother(_ identity: VerifiedIdentity, userID: String) async throws {
        if let owner = try await store.owner(ofIdentity: identity.provider, subject: identity.subject), owner != userID {
            throw AuthGateError(.identityAlreadyExists, "identity linked to another user")
        }
    }

    /// The change that links `identity` to `account`'s user, by GoTrue's rules: not banned, not
    /// linked already, an email taken over only when the provider verified it.
    private func linked(_ identity: VerifiedIdentity, to account: AccountSnapshot, now: Date) throws -> (AccountChange, [IdentityRecord]) {
        let key = IdentityKey(provider: identity.provider, subject: identity.subject)
        guard !account.user.isBanned(at: now) else { throw AuthGateError(.userBanned, "User is banned") }
        if account.identities.contains(where: { $0.key == key }) {
            throw AuthGateError(.identityAlreadyExists, "identity already linked to this user", clientText: .fixed("Identity is already linked"))
        }
        var user = account.user
        var change = AccountChange(base: account.stamp, user: user)
        if user.email == nil, let email = identity.email {
            guard identity.emailVerified else {
                throw AuthGateError(
                    .emailNotConfirmed, "the \(identity.provider) email is not verified",
                    clientText: .unverifiedEmail(provider: identity.provider)
                )
            }
            change.claimedEmail = email
            user.email = email
            user.emailConfirmedAt = now
        }
        let record = newIdentity(identity, userID: user.id, now: now)
        let identities = account.identities + [record]
        user.userMetadata = Self.merged(user.userMetadata, with: identity.identityData)
        if user.email != nil, user.emailConfirmedAt != nil { user.isAnonymous = false }
        user.appMetadata = Self.appMetadata(user.appMetadata, identities: identities)
        user.lastSignInAt = now
        user.updatedAt = now
        change.user = user
        change.savedIdentities = [record]
        change.claimedIdentities = [key]
        return (change, identities)
    }

    /// The change a sign-in makes after `lookup`: a returning user's (the identity's owner, or the
    /// holder of its email unless soft-deleted) or a new user's.
    private func decide(_ identity: VerifiedIdentity, lookup: SignInLookup, newUserMayClaimEmail: Bool, now: Date) throws -> (
        change: AccountChange, identities: [IdentityRecord]
    ) {
        guard lookup.identityOwner != nil || lookup.account.map({ $0.user.deletedAt == nil }) == true else {
            guard !signupsDisabled else { throw AuthGateError(.signupDisabled, "users.disable_signup: no user is created for \(identity.provider)") }
            return newUser(identity, claimingEmail: newUserMayClaimEmail, now: now)
        }
        guard let account = lookup.account else {
            throw AuthGateError(.storeCorrupt, "identity \(identity.provider) belongs to a user that does not exist (see `authgate doctor`)")
        }
        guard !account.user.isBanned(at: now) else { throw AuthGateError(.userBanned, "User is banned") }
        return returning(identity, account: account, now: now)
    }

    /// A returning user's change: its identity refreshed (or added, when found by email), the
    /// provider's data merged into `user_metadata`, the sign-in time.
    private func returning(_ identity: VerifiedIdentity, account: AccountSnapshot, now: Date) -> (AccountChange, [IdentityRecord]) {
        var user = account.user
        let key = IdentityKey(provider: identity.provider, subject: identity.subject)
        let existing = account.identities.first { $0.key == key }
        var record = existing ?? newIdentity(identity, userID: user.id, now: now)
        // Unchanged provider data keeps its dictionary, whose text the caches already hold.
        if !JSONValue.identicalObjects(record.identityData, identity.identityData) { record.identityData = identity.identityData }
        record.email = identity.email
        record.updatedAt = now
        record.lastSignInAt = now
        if let sealed = identity.sealedRefreshToken {
            record.sealedRefreshToken = sealed
            record.refreshTokenClientID = identity.refreshTokenClientID
        }
        var identities = account.identities.filter { $0.key != key }
        identities.append(record)
        identities.sort { $0.createdAt < $1.createdAt }
        user.userMetadata = Self.merged(user.userMetadata, with: identity.identityData)
        user.appMetadata = Self.appMetadata(user.appMetadata, identities: identities)
        user.lastSignInAt = now
        user.updatedAt = now
        var change = AccountChange(base: account.stamp, user: user)
        change.savedIdentities = [record]
        change.claimedIdentities = [key]
        return (change, identities)
    }

    /// A new user's change: the user, its identity and the index entries (the email's when it is
    /// verified and free).
    private func newUser(_ identity: VerifiedIdentity, claimingEmail: Bool, now: Date) -> (AccountChange, [IdentityRecord]) {
        let newID = UUIDBytes.random()
        var email: String?
        if claimingEmail, identity.emailVerified { email = identity.email }
        let record = newIdentity(identity, userID: newID, now: now)
        var user = UserRecord(
            id: newID, aud: tokens.audience, role: "authenticated", email: email, phone: nil, emailConfirmedAt: email == nil ? nil : now,
            appMetadata: [:], userMetadata: Self.merged([:], with: identity.identityData), isAnonymous: false, createdAt: now, updatedAt: now,
            lastSignInAt: now, bannedUntil: nil
        )
        user.appMetadata = Self.appMetadata(user.appMetadata, identities: [record])
        var change = AccountChange(base: nil, user: user)
        change.savedIdentities = [record]
        change.claimedIdentities = [IdentityKey(provider: identity.provider, subject: identity.subject)]
        change.claimedEmail = email
        return (change, [record])
    }

    private func newIdentity(_ identity: VerifiedIdentity, userID: String, now: Date) -> IdentityRecord {
        IdentityRecord(
            identityID: UUIDBytes.random(), userID: userID, provider: identity.provider, subject: identity.subject,
            identityData: identity.identityData, email: identity.email, createdAt: now, updatedAt: now, lastSignInAt: now,
            sealedRefreshToken: identity.sealedRefreshToken, refreshTokenClientID: identity.refreshTokenClientID
        )
    }

    /// `provider` is the oldest identity's provider; `providers` the distinct list in creation order.
    static func appMetadata(_ metadata: [String: JSONValue], identities: [IdentityRecord]) -> [String: JSONValue] {
        var metadata = metadata
        var providers: [String] = []
        for identity in identities.sorted(by: { $0.createdAt < $1.createdAt }) where !providers.contains(identity.provider) {
            providers.append(identity.provider)
        }
        guard let first = providers.first else { return metadata }
        let provider = JSONValue.string(first)
        let list = JSONValue.array(providers.map { .string($0) })
        // Unchanged (every sign-in of a returning user): the same dictionary, storage and all.
        if metadata.identicalMember("provider", provider), metadata.identicalMember("providers", list) { return metadata }
        metadata["provider"] = provider
        metadata["providers"] = list
        return metadata
    }

    /// A shallow merge where `null` deletes (GoTrue's `user_metadata` update rule). Onto empty
    /// metadata, an update without `null` is the result as it is: a new user's `user_metadata`
    /// then shares storage with its identity's `identity_data`, and ``JSONObjectTextMemo`` writes
    /// the two once. An update that changes nothing, byte for byte (a returning user's provider
    /// data, as a rule), gives `base` itself, so its storage and the text kept for it live on.
    static func merged(_ base: [String: JSONValue], with update: [String: JSONValue]) -> [String: JSONValue] {
        if base.isEmpty, !update.values.contains(.null) { return update }
        let changesNothing = update.allSatisfy { name, value in
            value == .null ? base[name] == nil : base.identicalMember(name, value)
        }
        if changesNothing { return base }
        var result = base
        for (key, value) in update {
            if value == .null { result.removeValue(forKey: key) } else { result[key] = value }
        }
        return result
    }
}
