/// OpenID Connect providers' discovery documents (``OIDCDiscoveryDocument``), one cache for the
/// whole gateway: the key sets of providers configured by discovery read `jwks_uri` from it, the
/// browser flow `authorization_endpoint` and `token_endpoint`. A document is fetched when first
/// needed and kept for its `Cache-Control: max-age` (5 minutes to 24 hours; 1 hour when it gives
/// none), so a key set's refetch (an unknown `kid`, its background refresh) costs the key set's
/// own fetch only, and one issuer's document is fetched once for both uses.
///
/// One fetch at a time per issuer (callers meanwhile wait for it). A failed fetch keeps serving
/// the document last read (a provider whose discovery endpoint is down still has its keys
/// refetched from the `jwks_uri` it last named); with none, the lookup fails (fail closed), and
/// the next fetch is tried only once the backoff since the last failure (2 s, doubling to 1 min)
/// has passed, so a flood of `/authorize` calls or sign-ins while the provider is down costs no
/// fetch each.
public actor OIDCDiscovery {
    /// Where the browser signs in and where its code is exchanged.
    public struct Endpoints: Sendable, Equatable {
        public let authorization: String
        public let token: String
    }

    private struct Entry {
        var document: OIDCDiscoveryDocument?
        var freshUntil: ContinuousClock.Instant?
        var consecutiveFailures = 0
        var retryAfter: ContinuousClock.Instant?
        var lastError = ""
        var inFlight: Task<(OIDCDiscoveryDocument, Duration?), any Error>?
    }

    private let fetcher: any JWKSFetching
    private let now: @Sendable () -> ContinuousClock.Instant
    private var entries: [String: Entry] = [:]
    /// Callers waiting for another caller's fetch (tests watch it).
    private(set) var callersWaitingForFetch = 0

    static let defaultLifetime: Duration = .seconds(3600)
    static let minimumLifetime: Duration = .seconds(300)
    static let maximumLifetime: Duration = .seconds(86_400)

    /// - Parameters:
    ///   - fetcher: how documents are fetched (``HTTPJWKSFetcher``: bounded time and size, no
    ///     redirect from `https` to `http`).
    ///   - now: the clock (tests move it).
    public init(fetcher: any JWKSFetching, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.fetcher = fetcher
        self.now = now
    }

    /// `issuer`'s browser-flow endpoints.
    /// - Throws: ``AuthGateError`` `provider_unavailable` when none could be read (the reason in
    ///   its message, for the log; never a secret: the document is public).
    public func endpoints(issuer: String) async throws -> Endpoints {
        let document = try await document(issuer: issuer, failure: .providerUnavailable)
        return Endpoints(
            authorization: try document.url("authorization_endpoint", failure: .providerUnavailable),
            token: try document.url("token_endpoint", failure: .providerUnavailable))
    }

    /// Where `issuer` publishes its signing keys (`jwks_uri`).
    /// - Throws: ``AuthGateError`` `keys_unavailable` when it could not be read.
    public func keySetURL(issuer: String) async throws -> String {
        try await document(issuer: issuer, failure: .keysUnavailable).url("jwks_uri", failure: .keysUnavailable)
    }

    /// `issuer`'s document: the cached one while fresh, else fetched (or joined, or the last one
    /// read when the fetch fails). Errors carry `failure` as their code.
    private func document(issuer: String, failure: AuthGateError.Code) async throws -> OIDCDiscoveryDocument {
        let start = now()
        var entry = entries[issuer] ?? Entry()
        if let document = entry.document, let freshUntil = entry.freshUntil, start < freshUntil { return document }
        if let task = entry.inFlight {
            callersWaitingForFetch += 1
            defer { callersWaitingForFetch -= 1 }
            do {
                return try await task.value.0
            } catch {
                return try fallback(issuer, error, failure: failure)
            }
        }
        if let retryAfter = entry.retryAfter, start < retryAfter { return try fallback(issuer, nil, failure: failure) }
        let fetcher = self.fetcher
        let task = Task { try await Self.fetch(issuer: issuer, with: fetcher) }
        entry.inFlight = task
        entries[issuer] = entry
        do {
            let (document, maxAge) = try await task.value
            let lifetime = min(max(maxAge ?? Self.defaultLifetime, Self.minimumLifetime), Self.maximumLifetime)
            entries[issuer] = Entry(document: document, freshUntil: now() + lifetime)
            return document
        } catch {
            var failed = entries[issuer] ?? Entry()
            failed.inFlight = nil
            failed.consecutiveFailures += 1
            failed.retryAfter = now() + ProviderKeySet.fetchBackoff(afterFailures: failed.consecutiveFailures)
            failed.lastError = Self.reason(error)
            entries[issuer] = failed
            return try fallback(issuer, error, failure: failure)
        }
    }

    /// The document last read, else a failure naming `error` (or the last one).
    private func fallback(_ issuer: String, _ error: (any Error)?, failure: AuthGateError.Code) throws -> OIDCDiscoveryDocument {
        let entry = entries[issuer] ?? Entry()
        if let document = entry.document { return document }
        let reason = error.map(Self.reason) ?? entry.lastError
        throw AuthGateError(failure, "the discovery document of \(issuer) could not be read: \(reason)")
    }

    private static func reason(_ error: any Error) -> String {
        (error as? AuthGateError)?.message ?? "\(error)"
    }

    private static func fetch(issuer: String, with fetcher: any JWKSFetching) async throws -> (OIDCDiscoveryDocument, Duration?) {
        let fetched = try await fetcher.fetch(OIDCDiscoveryDocument.url(of: issuer))
        return (try OIDCDiscoveryDocument(parsing: fetched.body, issuer: issuer), fetched.maxAge)
    }
}
