public import Logging
import Tracing

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The GoTrue flows AuthGate serves, on top of the store: id_token sign-in (with GoTrue's
/// find-or-create and linking rules), anonymous sign-up, refresh with rotation and reuse
/// detection, user authentication, logout scopes and user updates.
public struct AccountService: Sendable {
    let store: any AuthStore
    let tokens: TokensConfiguration
    let issuer: AccessTokenIssuer
    /// Verifies bearer tokens (also used by the edge proxy).
    public let accessTokens: AccessTokenVerifier
    let idTokens: IDTokenSignInVerifier
    let anonymous: AnonymousProvider
    let logger: Logger
    /// Bearer tokens already verified, or minted here (the signature check skipped on a hit; the
    /// account, its session and its ban are read on every call); emptied when the signing keys change.
    let verifiedTokens: VerifiedTokenCache
    /// Users' metadata text as their last token carried it (a refresh mints for an unchanged user).
    let claimsMetadata: ClaimsMetadataCache
    /// Exchanges Apple authorization codes for Apple's refresh token; nil unless Apple's REST API
    /// credentials and the token encryption key are configured.
    public var appleRefreshTokens: AppleRefreshTokens?
    /// `users.disable_signup`: no sign-in or sign-up creates a user (422 `signup_disabled`).
    public var signupsDisabled = false
    /// The `aud` of the users this gateway creates and of their tokens (`tokens.audience`).
    public var audience: String { tokens.audience }

    public init(
        store: any AuthStore,
        tokens: TokensConfiguration,
        keyRing: SigningKeyRing,
        idTokens: IDTokenSignInVerifier,
        logger: Logger
    ) {
        self.init(store: store, tokens: tokens, keys: SigningKeys(keyRing), idTokens: idTokens, logger: logger)
    }

    /// With keys that may be replaced while running (rotation). `verifiedTokenCacheSize` bounds
    /// the bearer tokens whose verification is remembered (`proxy.token_cache_size`), and
    /// `userCacheSize` the users whose metadata text is kept (`store.redis.record_cache_size`).
    public init(
        store: any AuthStore,
        tokens: TokensConfiguration,
        keys: SigningKeys,
        idTokens: IDTokenSignInVerifier,
        logger: Logger,
        verifiedTokenCacheSize: Int = 10_000,
        userCacheSize: Int = StoreConfiguration.Redis.defaultRecordCacheSize
    ) {
        self.store = store
        self.tokens = tokens
        self.issuer = AccessTokenIssuer(keys: keys)
        self.accessTokens = AccessTokenVerifier(keys: keys, issuer: tokens.issuer, audience: tokens.audience)
        self.idTokens = idTokens
        self.anonymous = idTokens.registry.anonymous
        self.logger = logger
        let verifiedTokens = VerifiedTokenCache(capacity: verifiedTokenCacheSize)
        self.verifiedTokens = verifiedTokens
        self.claimsMetadata = ClaimsMetadataCache(capacity: userCacheSize)
        keys.onReplace { _ in verifiedTokens.removeAll() }
    }

    // MARK: sign-in

    /// `POST /token?grant_type=id_token`: verifies the ID token (once; `accessToken`, the provider
    /// access token sent beside it, against its `at_hash`; Apple's against the request's `issuer`),
    /// finds or creates the user (or links the identity to `linkingTo`), and starts a session.
    /// `provider` is a configured provider's name (``IDTokenProviderResolution``).
    ///
    /// With `authorizationCode` (Apple only, an AuthGate extension of GoTrue's body), the code is
    /// exchanged at Apple before anything is written, and Apple's refresh token is stored, sealed,
    /// on the identity by the sign-in's own write; a code that Apple refuses, or that belongs to
    /// another Apple account, fails the sign-in.
    public func signInWithIDToken(
        provider: String, idToken: String, rawNonce: String?, accessToken: String? = nil, issuer: String? = nil, linkingTo: AuthenticatedUser?,
        authorizationCode: String? = nil, device: SessionDevice = .unknown, now: Date
    ) async throws -> IssuedSession {
        let (checked, marks) = try await GatewaySpans.run("auth.verify_id_token") { span in
            span?.attributes["auth.provider"] = provider
            return try await idTokens.check(
                provider: provider, idToken: idToken, rawNonce: rawNonce, accessToken: accessToken, issuer: issuer, now: now)
        }
        // A plain sign-in takes the token's single use with its lookup (one round trip less);
        // linking and Apple's code exchange take it first, before anything else is asked of the
        // store or of Apple.
        guard authorizationCode != nil || linkingTo != nil else {
            return try await signIn(checked, taking: marks, device: device, now: now)
        }
        try await idTokens.take(marks)
        var identity = checked
        if let authorizationCode {
            guard identity.provider == "apple" else {
                throw AuthGateError(.validationFailed, "authorization_code is only accepted with provider apple")
            }
            guard let appleRefreshTokens else {
                throw AuthGateError(
                    .providerAPINotConfigured, "authorization_code needs providers.apple team_id, key_id, private_key_file and a token encryption key"
                )
            }
            let clientID = identity.audiences.first ?? ""
            identity.sealedRefreshToken = try await GatewaySpans.run("auth.apple_code_exchange") { _ in
                try await appleRefreshTokens.sealedRefreshToken(code: authorizationCode, clientID: clientID, subject: identity.subject, now: now)
            }
            identity.refreshTokenClientID = clientID
        }
        if let target = linkingTo {
            return try await link(identity, to: target, device: device, now: now)
        }
        return try await signIn(identity, taking: nil, device: device, now: now)
    }

    /// `POST /signup` without email or phone: a new anonymous user and its first session, written
    /// at once (refused with ``signupsDisabled``).
    public func signUpAnonymously(data: [String: JSONValue], device: SessionDevice = .unknown, now: Date) async throws -> IssuedSession {
        let now = now.atStoredMillisecond
        guard anonymous.isEnabled else { throw AuthGateError(.anonymousProviderDisabled, "Anonymous sign-ins are disabled") }
        guard !signupsDisabled else { throw AuthGateError(.signupDisabled, "users.disable_signup: no anonymous user is created") }
        let user = UserRecord(
            id: UUIDBytes.random(), aud: tokens.audience, role: "authenticated", email: nil, phone: nil, emailConfirmedAt: nil,
            appMetadata: [:], userMetadata: data.filter { $0.value != .null }, isAnonymous: true, createdAt: now, updatedAt: now,
            lastSignInAt: now, bannedUntil: nil
        )
        var change = AccountChange(base: nil, user: user)
        let (session, refreshToken) = try newSession(for: user.id, method: "anonymous", device: device, now: now)
        change.newSession = (session, refreshToken.hash)
        guard case .committed = try await store.commit(change) else {
            throw AuthGateError(.storeCorrupt, "a new random user id was already taken")
        }
        store.recordAudit(.now("user_signedup", userID: user.id, actor: user.id, detail: ["provider": "anonymous", "session_id": session.id]))
        return try issue(for: user, identities: [], session: session, refreshToken: refreshToken, now: now)
    }

    // MARK: refresh

    /// `POST /token?grant_type=refresh_token`: rotation with GoTrue's reuse rules.
    public func refresh(_ presented: String, now: Date) async throws -> IssuedSession {
        // Anything that is not one of our refresh tokens (a legacy 12-character GoTrue token, a
        // typo) is "not found": official clients sign out only for that code (and a few others).
        guard let token = RefreshToken(parsing: presented) else {
            GatewayMetrics.refresh(outcome: "not_found")
            throw AuthGateError(.refreshTokenNotFound, "the refresh token does not parse")
        }
        let (child, sealedChild) = token.child()
        let (outcome, account) = try await store.rotateRefreshToken(
            RefreshRotation(
                userID: token.userID, sessionID: token.sessionID, presentedHash: token.hash, childHash: child.hash,
                sealedChild: sealedChild, now: now, reuseInterval: tokens.refresh.reuseInterval,
                sessionTimebox: tokens.refresh.sessionTimebox, inactivityTimeout: tokens.refresh.inactivityTimeout
            )
        )
        GatewayMetrics.refresh(outcome: outcome.metricName)
        let issued: RefreshToken
        switch outcome {
        case .rotated:
            issued = child
        case .reusedWithinInterval(let sealed):
            guard let current = token.open(sealed) else {
                throw AuthGateError(.refreshTokenNotFound, "Invalid Refresh Token: Refresh Token Not Found")
            }
            issued = current
        case .reuseDetected:
            try await revoked(userID: token.userID, sessionID: token.sessionID, reason: "refresh_token_reuse", now: now)
            store.recordAudit(
                .now(
                    "token_revoked", userID: token.userID, actor: token.userID,
                    detail: ["reason": "refresh_token_reuse", "session_id": token.sessionID]))
            logger.warning("refresh token reuse: session revoked", metadata: ["gw.user_id": "\(token.userID)", "gw.session_id": "\(token.sessionID)"])
            throw AuthGateError(.refreshTokenAlreadyUsed, "Invalid Refresh Token: Already Used")
        case .expiredTimebox:
            try await revoked(userID: token.userID, sessionID: token.sessionID, reason: "session_timebox", now: now)
            throw AuthGateError(.sessionExpired, "Invalid Refresh Token: Session Expired")
        case .expiredInactivity:
            try await revoked(userID: token.userID, sessionID: token.sessionID, reason: "inactivity", now: now)
            throw AuthGateError(
                .sessionExpired, "session inactive too long", clientText: .fixed("Invalid Refresh Token: Session Expired (Inactivity)"))
        case .notFound:
            throw AuthGateError(.refreshTokenNotFound, "Invalid Refresh Token: Refresh Token Not Found")
        case .userBanned:
            throw AuthGateError(.userBanned, "Invalid Refresh Token: User Banned")
        }
        guard let account, let session = account.session else {
            throw AuthGateError(.sessionNotFound, "Invalid Refresh Token: No Valid Session Found")
        }
        return try issue(for: account.user, identities: account.identities, session: session, refreshToken: issued, now: now)
    }

    // MARK: authenticated calls

    /// GoTrue's user authentication (`internal/api/auth.go`): a valid token, an existing user,
    /// its session alive, not banned.
    public func authenticate(bearer token: String, now: Date) async throws -> AuthenticatedUser {
        let claims = try verifiedClaims(token, now: now)
        guard let account = try await store.account(userID: claims.sub, sessionID: claims.sessionID) else {
            throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist")
        }
        if claims.sessionID != nil, account.session == nil {
            throw AuthGateError(.sessionNotFound, "Session from session_id claim in JWT does not exist")
        }
        guard !account.user.isBanned(at: now) else { throw AuthGateError(.userBanned, "User is banned") }
        return AuthenticatedUser(claims: claims, account: account)
    }

    /// An admin caller (the admin API): a valid token whose role is one of `roles`. A token that
    /// names a session or an existing user is held to the rules of ``authenticate(bearer:now:)``
    /// too (the session alive, the user neither banned nor deleted), so a role cannot outlive a
    /// revocation. A token naming neither (`authgate tokens service-role`) needs the role alone.
    public func authenticateAdmin(bearer token: String, roles: Set<String>, now: Date) async throws -> AccessTokenClaims {
        let claims = try verifiedClaims(token, now: now)
        guard roles.contains(claims.role) else { throw AuthGateError(.notAdmin, "User not allowed") }
        let account = try await store.account(userID: claims.sub, sessionID: claims.sessionID)
        if claims.sessionID != nil {
            guard let account else { throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist") }
            guard account.session != nil else {
                throw AuthGateError(.sessionNotFound, "Session from session_id claim in JWT does not exist")
            }
        }
        if let account, account.user.isBanned(at: now) { throw AuthGateError(.userBanned, "User is banned") }
        return claims
    }

    /// A client-named provider as it may be logged (see ``IdentityVerifierRegistry/label(for:)``).
    public func providerLabel(_ provider: String) -> String {
        idTokens.registry.label(for: provider)
    }

    /// The configured provider an id_token grant's `provider` (or, without one, its `issuer`)
    /// selects (``IDTokenProviderResolution``).
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/unknownProvider`` or
    ///   ``AuthGateError/Code/providerDisabled``, with GoTrue's texts.
    public func resolveIDTokenProvider(named provider: String, issuer: String) throws -> String {
        try idTokens.registry.resolution.provider(named: provider, issuer: issuer)
    }

    /// Which sessions `POST /logout` ends.
    public enum LogoutScope: String, Sendable, CaseIterable {
        case global, local, others
    }

    /// `POST /logout`: ends the sessions of the scope and announces each on the revocation stream.
    public func logout(_ caller: AuthenticatedUser, scope: LogoutScope, now: Date) async throws {
        let all = try await store.sessions(ofUser: caller.user.id).map(\.id)
        let current = caller.claims.sessionID
        let targets: [String]
        switch (scope, current) {
        case (_, nil), (.global, _): targets = all
        case (.local, .some(let id)): targets = [id]
        case (.others, .some(let id)): targets = all.filter { $0 != id }
        }
        let ended = try await store.deleteSessions(userID: caller.user.id, sessionIDs: targets)
        for id in ended {
            try await store.appendRevocation(RevocationEvent(kind: .session, userID: caller.user.id, sessionID: id, reason: "logout", at: now))
        }
        // Only a logout that ended something is an event: `scope=others` with no other session
        // ends nothing and leaves the caller signed in, so it could be sent without end, and the
        // audit stream keeps a fixed number of entries: each call would push an older one out.
        guard !ended.isEmpty else { return }
        store.recordAudit(.now("logout", userID: caller.user.id, detail: ["scope": scope.rawValue, "sessions": "\(ended.count)"]))
    }

    /// The caller's user and identities (`GET /user`).
    public func profile(of caller: AuthenticatedUser) async throws -> (UserRecord, [IdentityRecord]) {
        (caller.user, caller.account.identities)
    }

    /// `PUT /user` with `data`: a shallow merge into `user_metadata`; `null` deletes a key.
    /// - Throws: ``AuthGateError`` `validation_failed` when the merged metadata is over `limit`
    ///   bytes of JSON (nothing is saved).
    public func updateMetadata(of caller: AuthenticatedUser, data: [String: JSONValue], limit: Int, now: Date) async throws -> (
        UserRecord, [IdentityRecord]
    ) {
        let now = now.atStoredMillisecond
        // A compare-and-set from the account read when the caller was authenticated: a ban, a
        // deletion or another update that landed since is read again, never overwritten.
        let updated = try await store.updateAccount(userID: caller.user.id, sessionID: caller.claims.sessionID, startingFrom: caller.account) {
            account in
            if caller.claims.sessionID != nil, account.session == nil {
                throw AuthGateError(.sessionNotFound, "Session from session_id claim in JWT does not exist")
            }
            guard !account.user.isBanned(at: now) else { throw AuthGateError(.userBanned, "User is banned") }
            var user = account.user
            user.userMetadata = Self.merged(user.userMetadata, with: data)
            try MetadataLimit.check(user.userMetadata, limit: limit, name: "user_metadata")
            user.updatedAt = now
            return AccountChange(base: account.stamp, user: user)
        }
        guard let updated else { throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist") }
        return (updated.change.user, updated.account.identities)
    }

    // MARK: helpers

    /// The claims of a valid bearer token: from the cache of verified tokens, or verified now.
    private func verifiedClaims(_ token: String, now: Date) throws -> AccessTokenClaims {
        do {
            return try verifiedTokens.claims(for: token, now: now) { try accessTokens.verify($0, now: $1) }.claims
        } catch let error as AuthGateError {
            throw AuthGateError(.badJWT, "invalid JWT: unable to parse or verify signature, \(error.code)")
        }
    }

    /// Announces the sessions a sign-in ended to keep its user within
    /// `tokens.refresh.max_sessions_per_user`: on the revocation stream (every replica's proxy
    /// refuses their tokens) and in the audit trail.
    func endedOverLimit(_ sessionIDs: [String], userID: String, now: Date) async throws {
        for sessionID in sessionIDs {
            try await revoked(userID: userID, sessionID: sessionID, reason: "session_limit", now: now)
            store.recordAudit(.now("session_revoked", userID: userID, detail: ["session_id": sessionID, "reason": "session_limit"]))
        }
    }

    private func revoked(userID: String, sessionID: String, reason: String, now: Date) async throws {
        try await store.appendRevocation(RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: reason, at: now))
    }

    /// A new session's record and first refresh token (not stored yet).
    func newSession(for userID: String, method: String, device: SessionDevice, now: Date) throws -> (SessionRecord, RefreshToken) {
        let session = SessionRecord(
            id: UUIDBytes.random(), userID: userID, createdAt: now, refreshedAt: now, aal: "aal1",
            amr: [.init(method: method, timestamp: Int64(now.timeIntervalSince1970))], device: device
        )
        guard let refreshToken = RefreshToken.generate(userID: userID, sessionID: session.id) else {
            throw AuthGateError(.storeCorrupt, "user or session id is not a UUID")
        }
        return (session, refreshToken)
    }

    func issue(for user: UserRecord, identities: [IdentityRecord], session: SessionRecord, refreshToken: RefreshToken, now: Date) throws
        -> IssuedSession
    {
        let issuedAt = Int64(now.timeIntervalSince1970)
        let expiresAt = issuedAt + Int64(tokens.accessTokenTTL.inSeconds)
        let claims = AccessTokenClaims(
            iss: tokens.issuer, sub: user.id, aud: user.aud, exp: expiresAt, iat: issuedAt, email: user.email ?? "", phone: user.phone ?? "",
            appMetadata: user.appMetadata, userMetadata: user.userMetadata, role: user.role, aal: session.aal, amr: session.amr,
            sessionID: session.id, isAnonymous: user.isAnonymous
        )
        let accessToken = try issuer.mint(claims, metadata: claimsMetadata.text(for: user))
        // Signed here a moment ago: the first request that presents it (clients call GET /user
        // after every sign-in and refresh) need not verify the signature again. Only a token that
        // verification would accept is remembered: a user whose stored `aud` is not the
        // configured audience gets a token that every verification refuses.
        if accessTokens.wouldAccept(claims, now: now) {
            verifiedTokens.insert(accessToken, claims: claims)
        }
        return IssuedSession(
            accessToken: accessToken, expiresIn: expiresAt - issuedAt, expiresAt: expiresAt, refreshToken: refreshToken.value,
            user: user, identities: identities, session: session
        )
    }
}
