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

    public init(
        store: any AuthStore,
        tokens: TokensConfiguration,
        keyRing: SigningKeyRing,
        idTokens: IDTokenSignInVerifier,
        logger: Logger
    ) {
        self.init(store: store, tokens: tokens, keys: SigningKeys(keyRing), idTokens: idTokens, logger: logger)
    }

    /// With keys that may be replaced while running (rotation).
    public init(
        store: any AuthStore,
        tokens: TokensConfiguration,
        keys: SigningKeys,
        idTokens: IDTokenSignInVerifier,
        logger: Logger
    ) {
        self.store = store
        self.tokens = tokens
        self.issuer = AccessTokenIssuer(keys: keys)
        self.accessTokens = AccessTokenVerifier(keys: keys, issuer: tokens.issuer, audience: tokens.audience)
        self.idTokens = idTokens
        self.anonymous = idTokens.registry.anonymous
        self.logger = logger
    }

    // MARK: sign-in

    /// `POST /token?grant_type=id_token`: verifies the ID token (once), finds or creates the user
    /// (or links the identity to `linkingTo`), and starts a session.
    public func signInWithIDToken(provider: String, idToken: String, rawNonce: String?, linkingTo: AuthenticatedUser?, now: Date) async throws
        -> IssuedSession
    {
        let identity = try await withSpan("auth.verify_id_token") { span in
            span.attributes["auth.provider"] = provider
            return try await idTokens.verify(provider: provider, idToken: idToken, rawNonce: rawNonce, now: now)
        }
        var user: UserRecord
        if let target = linkingTo {
            user = try await link(identity, to: target.user, now: now)
        } else {
            user = try await findOrCreateUser(for: identity, now: now)
        }
        guard !user.isBanned(at: now) else { throw AuthGateError(.userBanned, "User is banned") }
        user.lastSignInAt = now
        user.updatedAt = now
        try await store.saveUser(user)
        return try await startSession(for: user, method: "oauth", now: now)
    }

    /// `POST /signup` without email or phone: a new anonymous user and its first session.
    public func signUpAnonymously(data: [String: JSONValue], now: Date) async throws -> IssuedSession {
        guard anonymous.isEnabled else { throw AuthGateError(.anonymousProviderDisabled, "Anonymous sign-ins are disabled") }
        let user = UserRecord(
            id: UUIDBytes.random(), aud: tokens.audience, role: "authenticated", email: nil, phone: nil, emailConfirmedAt: nil,
            appMetadata: [:], userMetadata: data.filter { $0.value != .null }, isAnonymous: true, createdAt: now, updatedAt: now,
            lastSignInAt: now, bannedUntil: nil
        )
        try await store.saveUser(user)
        return try await startSession(for: user, method: "anonymous", now: now)
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
        guard var user = try await store.user(id: token.userID) else {
            throw AuthGateError(.refreshTokenNotFound, "Invalid Refresh Token: Refresh Token Not Found")
        }
        guard !user.isBanned(at: now) else {
            GatewayMetrics.refresh(outcome: "banned")
            throw AuthGateError(.userBanned, "Invalid Refresh Token: User Banned")
        }
        guard let child = RefreshToken.generate(userID: token.userID, sessionID: token.sessionID) else {
            throw AuthGateError(.storeCorrupt, "a refresh token's user or session id is not a UUID")
        }
        let outcome = try await store.rotateRefreshToken(
            RefreshRotation(
                userID: token.userID, sessionID: token.sessionID, presentedHash: token.hash, childHash: child.hash,
                sealedChild: try token.seal(child), now: now, reuseInterval: tokens.refresh.reuseInterval,
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
        }
        guard let session = try await store.session(userID: token.userID, sessionID: token.sessionID) else {
            throw AuthGateError(.sessionNotFound, "Invalid Refresh Token: No Valid Session Found")
        }
        user.updatedAt = max(user.updatedAt, user.createdAt)
        return try await issue(for: user, session: session, refreshToken: issued, now: now)
    }

    // MARK: authenticated calls

    /// GoTrue's user authentication (`internal/api/auth.go`): a valid token, an existing user,
    /// its session alive, not banned.
    public func authenticate(bearer token: String, now: Date) async throws -> AuthenticatedUser {
        let claims: AccessTokenClaims
        do {
            claims = try accessTokens.verify(token, now: now)
        } catch let error as AuthGateError {
            throw AuthGateError(.badJWT, "invalid JWT: unable to parse or verify signature, \(error.code)")
        }
        guard let user = try await store.user(id: claims.sub) else {
            throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist")
        }
        if let sessionID = claims.sessionID, try await store.session(userID: user.id, sessionID: sessionID) == nil {
            throw AuthGateError(.sessionNotFound, "Session from session_id claim in JWT does not exist")
        }
        guard !user.isBanned(at: now) else { throw AuthGateError(.userBanned, "User is banned") }
        return AuthenticatedUser(claims: claims, user: user)
    }

    /// An admin caller (the admin API): a valid token whose role is one of `roles`. A token that
    /// names a session or an existing user is held to the rules of ``authenticate(bearer:now:)``
    /// too (the session alive, the user neither banned nor deleted), so a role cannot outlive a
    /// revocation. A token naming neither (`authgate tokens service-role`) needs the role alone.
    public func authenticateAdmin(bearer token: String, roles: Set<String>, now: Date) async throws -> AccessTokenClaims {
        let claims: AccessTokenClaims
        do {
            claims = try accessTokens.verify(token, now: now)
        } catch let error as AuthGateError {
            throw AuthGateError(.badJWT, "invalid JWT: unable to parse or verify signature, \(error.code)")
        }
        guard roles.contains(claims.role) else { throw AuthGateError(.notAdmin, "User not allowed") }
        let user = try await store.user(id: claims.sub)
        if let sessionID = claims.sessionID {
            guard let user else { throw AuthGateError(.userNotFound, "User from sub claim in JWT does not exist") }
            guard try await store.session(userID: user.id, sessionID: sessionID) != nil else {
                throw AuthGateError(.sessionNotFound, "Session from session_id claim in JWT does not exist")
            }
        }
        if let user, user.isBanned(at: now) { throw AuthGateError(.userBanned, "User is banned") }
        return claims
    }

    /// A client-named provider as it may be logged (see ``IdentityVerifierRegistry/label(for:)``).
    public func providerLabel(_ provider: String) -> String {
        idTokens.registry.label(for: provider)
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
        for id in try await store.deleteSessions(userID: caller.user.id, sessionIDs: targets) {
            try await store.appendRevocation(RevocationEvent(kind: .session, userID: caller.user.id, sessionID: id, reason: "logout", at: now))
        }
    }

    /// The caller's user and identities (`GET /user`).
    public func profile(of caller: AuthenticatedUser) async throws -> (UserRecord, [IdentityRecord]) {
        (caller.user, try await store.identities(ofUser: caller.user.id))
    }

    /// `PUT /user` with `data`: a shallow merge into `user_metadata`; `null` deletes a key.
    /// - Throws: ``AuthGateError`` `validation_failed` when the merged metadata is over `limit`
    ///   bytes of JSON (nothing is saved).
    public func updateMetadata(of caller: AuthenticatedUser, data: [String: JSONValue], limit: Int, now: Date) async throws -> (
        UserRecord, [IdentityRecord]
    ) {
        var user = caller.user
        for (key, value) in data {
            if value == .null { user.userMetadata.removeValue(forKey: key) } else { user.userMetadata[key] = value }
        }
        try MetadataLimit.check(user.userMetadata, limit: limit, name: "user_metadata")
        user.updatedAt = now
        try await store.saveUser(user)
        return (user, try await store.identities(ofUser: user.id))
    }

    // MARK: helpers

    private func revoked(userID: String, sessionID: String, reason: String, now: Date) async throws {
        try await store.appendRevocation(RevocationEvent(kind: .session, userID: userID, sessionID: sessionID, reason: reason, at: now))
    }

    func startSession(for user: UserRecord, method: String, now: Date) async throws -> IssuedSession {
        let session = SessionRecord(
            id: UUIDBytes.random(), userID: user.id, createdAt: now, refreshedAt: now, aal: "aal1",
            amr: [.init(method: method, timestamp: Int64(now.timeIntervalSince1970))]
        )
        guard let refreshToken = RefreshToken.generate(userID: user.id, sessionID: session.id) else {
            throw AuthGateError(.storeCorrupt, "user or session id is not a UUID")
        }
        try await store.createSession(session, refreshTokenHash: refreshToken.hash)
        return try await issue(for: user, session: session, refreshToken: refreshToken, now: now)
    }

    private func issue(for user: UserRecord, session: SessionRecord, refreshToken: RefreshToken, now: Date) async throws -> IssuedSession {
        let issuedAt = Int64(now.timeIntervalSince1970)
        let expiresAt = issuedAt + Int64(tokens.accessTokenTTL.inSeconds)
        let claims = AccessTokenClaims(
            iss: tokens.issuer, sub: user.id, aud: user.aud, exp: expiresAt, iat: issuedAt, email: user.email ?? "", phone: user.phone ?? "",
            appMetadata: user.appMetadata, userMetadata: user.userMetadata, role: user.role, aal: session.aal, amr: session.amr,
            sessionID: session.id, isAnonymous: user.isAnonymous
        )
        return IssuedSession(
            accessToken: try issuer.mint(claims), expiresIn: expiresAt - issuedAt, expiresAt: expiresAt, refreshToken: refreshToken.value,
            user: user, identities: try await store.identities(ofUser: user.id), session: session
        )
    }
}
