#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Decides whether a proxied request may pass: verifies AuthGate access tokens (cached until
/// `exp`), checks revocation in memory, and applies the route's policy. No Redis round trip per
/// request while the revocation feed is current; when it is stale past the bound, the session is
/// checked in the store, and when the store is unreachable too, the request is refused (fail closed).
public final class EdgeAuthenticator: Sendable {
    /// The outcome for one request.
    public enum Decision: Sendable {
        /// Pass, with the caller's claims (nil on an `optional` or `public` route without a token).
        case allow(AccessTokenClaims?)
        /// 401: no usable token.
        case unauthorized(reason: String)
        /// 403: a valid token the route's policy refuses.
        case forbidden(reason: String)
        /// 503: revocation cannot be checked right now.
        case unavailable(reason: String)
    }

    private let verifier: AccessTokenVerifier
    private let view: RevocationView
    private let store: any AuthStore
    /// Seconds of feed staleness tolerated before falling back to the store; nil when the view
    /// is fed in process (memory store) and always current.
    private let maximumStaleness: TimeInterval?
    private let cache: VerifiedTokenCache

    /// With a verified-token cache of its own, of `cacheCapacity` tokens.
    public convenience init(
        verifier: AccessTokenVerifier, view: RevocationView, store: any AuthStore, maximumStaleness: TimeInterval?, cacheCapacity: Int
    ) {
        self.init(
            verifier: verifier, cache: VerifiedTokenCache(capacity: cacheCapacity), view: view, store: store, maximumStaleness: maximumStaleness)
    }

    /// Verifying with the GoTrue endpoints' verifier and sharing their verified-token cache: a
    /// token the replica minted (``AccountService`` keeps each one) or verified at `/user` is not
    /// verified again when it comes through the proxy, and one cache of
    /// `proxy.token_cache_size` serves both instead of two. The cache is emptied when the signing
    /// keys change (``AccountService`` asks for it).
    public convenience init(accounts: AccountService, view: RevocationView, store: any AuthStore, maximumStaleness: TimeInterval?) {
        self.init(verifier: accounts.accessTokens, cache: accounts.verifiedTokens, view: view, store: store, maximumStaleness: maximumStaleness)
    }

    private init(
        verifier: AccessTokenVerifier, cache: VerifiedTokenCache, view: RevocationView, store: any AuthStore, maximumStaleness: TimeInterval?
    ) {
        self.verifier = verifier
        self.view = view
        self.store = store
        self.maximumStaleness = maximumStaleness
        self.cache = cache
    }

    /// Forgets the verified tokens; called when the signing keys are replaced.
    public func forgetVerifiedTokens() {
        cache.removeAll()
    }

    /// Tokens currently cached.
    public var cachedTokens: Int { cache.count }

    /// What memory alone can decide about a request.
    public enum MemoryDecision: Sendable {
        case decided(Decision)
        /// The token is good but the revocation feed is stale: its session must be checked in the store.
        case needsStore(AccessTokenClaims)
    }

    /// Applies `route`'s policy to a request carrying `bearer` (nil when it has none).
    public func authorize(bearer: String?, route: RouteConfiguration, now: Date) async -> Decision {
        switch authorizeFromMemory(bearer: bearer, route: route, now: now) {
        case .decided(let decision):
            return decision
        case .needsStore(let claims):
            if let revoked = await storeRevocation(claims) { return revoked }
            return policy(route, claims)
        }
    }

    /// The rest of a decision that memory could not make (``MemoryDecision/needsStore(_:)``): the
    /// session is looked up in the store, then the route's policy applies.
    public func checkStore(_ claims: AccessTokenClaims, route: RouteConfiguration) async -> Decision {
        if let revoked = await storeRevocation(claims) { return revoked }
        return policy(route, claims)
    }

    /// ``recheck(_:now:)`` without waiting: `needsStore` when the revocation view is too stale.
    public func recheckFromMemory(_ claims: AccessTokenClaims, now: Date) -> MemoryDecision {
        if Int64(now.timeIntervalSince1970) >= claims.exp { return .decided(.unauthorized(reason: "token_expired")) }
        switch memoryRevocation(claims, now: now) {
        case .revoked: return .decided(.unauthorized(reason: "session_revoked"))
        case .stale: return .needsStore(claims)
        case .current: return .decided(.allow(claims))
        }
    }

    /// ``authorize(bearer:route:now:)`` without waiting for anything: signature checks (cached),
    /// the revocation view and the route's policy; `needsStore` when the view is too stale to
    /// trust. Safe to call on an event loop.
    public func authorizeFromMemory(bearer: String?, route: RouteConfiguration, now: Date) -> MemoryDecision {
        if route.auth == .public { return .decided(.allow(nil)) }
        guard let bearer else {
            return .decided(route.auth == .optional ? .allow(nil) : .unauthorized(reason: "no bearer token"))
        }
        let claims: AccessTokenClaims
        do {
            let verified = try cache.claims(for: bearer, now: now) { try verifier.verify($0, now: $1) }
            GatewayMetrics.tokenCache(hit: verified.cached)
            claims = verified.claims
        } catch let error as AuthGateError {
            GatewayMetrics.tokenCache(hit: false)
            return .decided(.unauthorized(reason: error.code.description))
        } catch {
            GatewayMetrics.tokenCache(hit: false)
            return .decided(.unauthorized(reason: "malformed"))
        }
        switch memoryRevocation(claims, now: now) {
        case .revoked: return .decided(.unauthorized(reason: "session_revoked"))
        case .stale: return .needsStore(claims)
        case .current: return .decided(policy(route, claims))
        }
    }

    /// Checks again claims that were allowed earlier (a long-lived connection): refused once the
    /// token has expired or its session was revoked, the user signed out everywhere or banned;
    /// unavailable when the revocation state cannot be known.
    public func recheck(_ claims: AccessTokenClaims, now: Date) async -> Decision {
        if Int64(now.timeIntervalSince1970) >= claims.exp { return .unauthorized(reason: "token_expired") }
        switch memoryRevocation(claims, now: now) {
        case .revoked: return .unauthorized(reason: "session_revoked")
        case .stale: return await storeRevocation(claims) ?? .allow(claims)
        case .current: return .allow(claims)
        }
    }

    private enum MemoryRevocation { case revoked, stale, current }

    private func memoryRevocation(_ claims: AccessTokenClaims, now: Date) -> MemoryRevocation {
        if view.isRevoked(sessionID: claims.sessionID, userID: claims.sub, issuedAt: claims.iat) { return .revoked }
        guard let maximumStaleness else { return .current }
        if let staleness = view.staleness(now: now), staleness <= maximumStaleness { return .current }
        return .stale
    }

    /// The feed is behind: asks the store, and refuses when it cannot answer.
    private func storeRevocation(_ claims: AccessTokenClaims) async -> Decision? {
        do {
            guard let sessionID = claims.sessionID else { return nil }
            guard try await store.session(userID: claims.sub, sessionID: sessionID) != nil else {
                return .unauthorized(reason: "session_revoked")
            }
            return nil
        } catch {
            return .unavailable(reason: "revocation state unavailable")
        }
    }

    private func policy(_ route: RouteConfiguration, _ claims: AccessTokenClaims) -> Decision {
        if claims.isAnonymous, !route.allowAnonymous { return .forbidden(reason: "anonymous users may not use this route") }
        for (path, expected) in route.requireClaims.sorted(by: { $0.key < $1.key }) {
            guard Self.claim(path, in: claims) == expected else { return .forbidden(reason: "claim \(path) does not match") }
        }
        return .allow(claims)
    }

    /// A claim as text: `role`, `aal`, `sub`, `email`, `is_anonymous`, or a key inside
    /// `app_metadata.` (never `user_metadata.`: each user writes their own, so it decides nothing;
    /// the configuration refuses it too).
    static func claim(_ path: String, in claims: AccessTokenClaims) -> String? {
        switch path {
        case "role": return claims.role
        case "aal": return claims.aal
        case "sub": return claims.sub
        case "email": return claims.email
        case "is_anonymous": return String(claims.isAnonymous)
        default:
            let parts = path.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { return nil }
            guard parts[0] == "app_metadata" else { return nil }
            let container = claims.appMetadata
            switch container[parts[1]] {
            case .string(let text): return text
            case .integer(let value): return String(value)
            case .bool(let value): return String(value)
            case .double(let value): return String(value)
            default: return nil
            }
        }
    }
}
