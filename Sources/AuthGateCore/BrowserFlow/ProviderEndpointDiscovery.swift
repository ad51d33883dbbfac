/// The browser flow's endpoints of OpenID Connect providers configured without them:
/// `authorization_endpoint` and `token_endpoint` from the issuer's discovery document
/// (``OIDCDiscoveryDocument``), fetched when first needed and kept for the document's
/// `Cache-Control: max-age` (5 minutes to 24 hours; 1 hour when it gives none).
///
/// One fetch at a time per issuer (callers meanwhile wait for it). A failed fetch keeps serving
/// the endpoints last read; with none, the lookup fails (fail closed), and the next fetch is tried
/// only once the backoff since the last failure (2 s, doubling to 1 min) has passed, so a flood of
/// `/authorize` calls while the provider is down costs no fetch each.
public actor ProviderEndpointDiscovery {
    /// Where the browser signs in and where its code is exchanged.
    public struct Endpoints: Sendable, Equatable {
        public let authorization: String
        public let token: String
    }

    private struct Entry {
        var endpoints: Endpoints?
        var freshUntil: ContinuousClock.Instant?
        var consecutiveFailures = 0
        var retryAfter: ContinuousClock.Instant?
        var lastError = ""
        var inFlight: Task<(Endpoints, Duration?), any Error>?
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

    /// `issuer`'s endpoints.
    /// - Throws: ``AuthGateError`` `provider_unavailable` when none could be read (the reason in
    ///   its message, for the log; never a secret: the document is public).
    public func endpoints(issuer: String) async throws -> Endpoints {
        let start = now()
        var entry = entries[issuer] ?? Entry()
        if let endpoints = entry.endpoints, let freshUntil = entry.freshUntil, start < freshUntil { return endpoints }
        if let task = entry.inFlight {
            callersWaitingForFetch += 1
            defer { callersWaitingForFetch -= 1 }
            do {
                return try await task.value.0
            } catch {
                return try fallback(issuer, error)
            }
        }
        if let retryAfter = entry.retryAfter, start < retryAfter { return try fallback(issuer, nil) }
        let fetcher = self.fetcher
        let task = Task { try await Self.fetch(issuer: issuer, with: fetcher) }
        entry.inFlight = task
        entries[issuer] = entry
        do {
            let (endpoints, maxAge) = try await task.value
            let lifetime = min(max(maxAge ?? Self.defaultLifetime, Self.minimumLifetime), Self.maximumLifetime)
            entries[issuer] = Entry(endpoints: endpoints, freshUntil: now() + lifetime)
            return endpoints
        } catch {
            var failed = entries[issuer] ?? Entry()
            failed.inFlight = nil
            failed.consecutiveFailures += 1
            failed.retryAfter = now() + .seconds(min(60, 1 << min(failed.consecutiveFailures, 6)))
            failed.lastError = Self.reason(error)
            entries[issuer] = failed
            return try fallback(issuer, error)
        }
    }

    /// The endpoints last read, else a failure naming `error` (or the last one).
    private func fallback(_ issuer: String, _ error: (any Error)?) throws -> Endpoints {
        let entry = entries[issuer] ?? Entry()
        if let endpoints = entry.endpoints { return endpoints }
        let reason = error.map(Self.reason) ?? entry.lastError
        throw AuthGateError(.providerUnavailable, "the endpoints of \(issuer) are unknown: \(reason)")
    }

    private static func reason(_ error: any Error) -> String {
        (error as? AuthGateError)?.message ?? "\(error)"
    }

    private static func fetch(issuer: String, with fetcher: any JWKSFetching) async throws -> (Endpoints, Duration?) {
        let fetched: FetchedDocument
        do {
            fetched = try await fetcher.fetch(OIDCDiscoveryDocument.url(of: issuer))
        } catch let error as AuthGateError {
            throw AuthGateError(.providerUnavailable, error.message)
        }
        let document = try OIDCDiscoveryDocument(parsing: fetched.body, issuer: issuer, failure: .providerUnavailable)
        return (Endpoints(authorization: try document.url("authorization_endpoint"), token: try document.url("token_endpoint")), fetched.maxAge)
    }
}
