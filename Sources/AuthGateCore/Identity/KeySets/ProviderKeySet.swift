public import Logging
public import ServiceLifecycle
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One provider's signing keys: fetched, cached, refreshed, and looked up by `kid`.
///
/// - Honours `Cache-Control: max-age` minus `Age` (between 30 s and 24 h; 1 h when absent) and
///   refreshes in the background before the set goes stale (run it as a `Service`).
/// - On an unknown `kid`, refetches once: at most once per `unknownKeyRefetchInterval` (30 s) and
///   single-flight, so a flood of junk `kid`s costs at most one fetch per interval.
/// - When a fetch fails, keeps serving the last good set and reports staleness in ``status()``.
///   With no set ever loaded, every lookup fails (fail closed), and a lookup starts a fetch only
///   once the retry backoff since the last failure (2 s, 4 s, 8 s … 1 min) has passed: while the
///   provider cannot be reached, a flood of sign-ins costs no fetch and no log line each.
public actor ProviderKeySet {
    /// Where the keys come from.
    public enum Source: Sendable, Hashable {
        case url(String)
        case file(String)
        /// `<issuer>/.well-known/openid-configuration` (through ``OIDCDiscovery``, which keeps
        /// it for its lifetime), then its `jwks_uri`.
        case discovery(issuer: String)
    }

    /// What `/readyz` and logs report.
    public struct Status: Sendable {
        public let provider: String
        public let keyCount: Int
        /// Seconds since the last successful load, nil if none.
        public let ageSeconds: Double?
        /// True when the set is past its freshness lifetime (a refresh failed) or was never loaded.
        public let isStale: Bool
        public let lastError: String?
        /// Seconds the current set stays fresh, nil if none is loaded.
        public let freshForSeconds: Double?
        /// Fetches attempted so far (tests use it to check rate limiting).
        public let fetchCount: Int
    }

    private struct Loaded {
        let keys: [String: ProviderPublicKey]
        let loadedAt: ContinuousClock.Instant
        let freshUntil: ContinuousClock.Instant
    }

    /// The provider name, for logs.
    public nonisolated let provider: String
    private let source: Source
    private let algorithm: ProvidersConfiguration.VerificationAlgorithm
    private let fetcher: any JWKSFetching
    /// Where a `.discovery` source finds its `jwks_uri`.
    private let discovery: OIDCDiscovery
    private let logger: Logger
    private let unknownKeyRefetchInterval: Duration
    private let minimumLifetime: Duration
    private let clock = ContinuousClock()

    private var loaded: Loaded?
    /// The keys of ``loaded``, readable without entering the actor: every sign-in looks a key up,
    /// and entering the actor cost two task hops each time.
    private nonisolated let installedKeys = Mutex<[String: ProviderPublicKey]>([:])
    private var inFlight: Task<Loaded, any Error>?
    private var lastUnknownKeyRefetch: ContinuousClock.Instant?
    private var lastError: String?
    /// When the last fetch failed; nil once one succeeds.
    private var lastFailure: ContinuousClock.Instant?
    private var consecutiveFailures = 0
    private var fetchCount = 0

    static let defaultLifetime: Duration = .seconds(3600)
    static let maximumLifetime: Duration = .seconds(86_400)

    /// Creates a key set; nothing is fetched until the first lookup or ``refresh()``.
    /// - Parameter discovery: the discovery documents a `.discovery` source reads (the gateway's
    ///   one cache, shared with the browser flow); one of its own, on `fetcher`, when nil.
    public init(
        provider: String,
        source: Source,
        algorithm: ProvidersConfiguration.VerificationAlgorithm,
        fetcher: any JWKSFetching,
        discovery: OIDCDiscovery? = nil,
        logger: Logger,
        unknownKeyRefetchInterval: Duration = .seconds(30),
        minimumLifetime: Duration = .seconds(30)
    ) {
        self.minimumLifetime = minimumLifetime
        self.provider = provider
        self.source = source
        self.algorithm = algorithm
        self.fetcher = fetcher
        self.discovery = discovery ?? OIDCDiscovery(fetcher: fetcher)
        self.logger = logger
        self.unknownKeyRefetchInterval = unknownKeyRefetchInterval
    }

    /// The key with this `kid`, refetching once (rate-limited, single-flight) when it is unknown.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/unknownKeyID``, or
    ///   ``AuthGateError/Code/keysUnavailable`` when no key set could ever be loaded.
    nonisolated func key(for kid: String) async throws -> ProviderPublicKey {
        if let key = installedKeys.withLock({ $0[kid] }) { return key }
        return try await loadedKey(for: kid)
    }

    /// ``key(for:)`` when the installed set does not have the key: loads the set or refetches it.
    private func loadedKey(for kid: String) async throws -> ProviderPublicKey {
        if loaded == nil {
            // A fetch in flight is joined; otherwise one failed lately answers for this lookup.
            if inFlight == nil, let lastFailure, clock.now - lastFailure < failureBackoff {
                throw AuthGateError(.keysUnavailable, "no key set for \(provider) could be loaded: \(lastError ?? "the last fetch failed")")
            }
            do {
                try await refresh()
            } catch {
                throw AuthGateError(.keysUnavailable, "no key set for \(provider) could be loaded: \(lastError ?? "\(error)")")
            }
        }
        if let key = loaded?.keys[kid] { return key }
        let now = clock.now
        if let last = lastUnknownKeyRefetch, now - last < unknownKeyRefetchInterval {
            throw AuthGateError(.unknownKeyID, "no \(provider) key has kid \"\(Self.printable(kid))\"")
        }
        lastUnknownKeyRefetch = now
        try? await refresh()
        if let key = loaded?.keys[kid] { return key }
        throw AuthGateError(.unknownKeyID, "no \(provider) key has kid \"\(Self.printable(kid))\" (the set was refetched)")
    }

    /// Loads the key set now; concurrent callers share one fetch. On failure the last good set stays.
    public func refresh() async throws {
        if let inFlight {
            _ = try await inFlight.value
            return
        }
        // The task stores the result itself, on the actor, before anyone awaiting it resumes:
        // callers that joined this fetch must find the new set in place.
        let task = Task {
            let fresh = try await self.load()
            self.install(fresh)
            return fresh
        }
        inFlight = task
        defer { inFlight = nil }
        do {
            _ = try await task.value
            GatewayMetrics.keySetFetch(provider: provider, failed: false)
        } catch {
            GatewayMetrics.keySetFetch(provider: provider, failed: true)
            consecutiveFailures += 1
            lastFailure = clock.now
            lastError = (error as? AuthGateError)?.message ?? "\(error)"
            logger.warning(
                "provider key set fetch failed; keeping the last good set",
                metadata: [
                    "gw.provider": "\(provider)", "gw.error": "\(lastError ?? "")", "gw.keys_loaded": "\(loaded?.keys.count ?? 0)",
                    "gw.consecutive_failures": "\(consecutiveFailures)"
                ]
            )
            throw error
        }
    }

    private func install(_ fresh: Loaded) {
        loaded = fresh
        installedKeys.withLock { $0 = fresh.keys }
        consecutiveFailures = 0
        lastFailure = nil
        lastError = nil
    }

    /// The set's state for `/readyz` and logs.
    public func status() -> Status {
        let now = clock.now
        if let loaded { GatewayMetrics.keySetAge(provider: provider, seconds: (now - loaded.loadedAt).inSeconds) }
        return Status(
            provider: provider,
            keyCount: loaded?.keys.count ?? 0,
            ageSeconds: loaded.map { (now - $0.loadedAt).inSeconds },
            isStale: loaded.map { now > $0.freshUntil } ?? true,
            lastError: lastError,
            freshForSeconds: loaded.map { ($0.freshUntil - now).inSeconds },
            fetchCount: fetchCount
        )
    }

    private func load() async throws -> Loaded {
        fetchCount += 1
        let document: FetchedDocument
        switch source {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw AuthGateError(.keysUnavailable, "cannot read the JWKS file \(path)")
            }
            document = FetchedDocument(body: Array(data), maxAge: nil)
        case .url(let url):
            document = try await fetcher.fetch(url)
        case .discovery(let issuer):
            document = try await fetcher.fetch(try await discovery.keySetURL(issuer: issuer))
        }
        let parsed = try JWKSetParser.parse(document.body, algorithm: algorithm)
        for skipped in parsed.skipped {
            logger.notice(
                "skipped a provider key",
                metadata: ["gw.provider": "\(provider)", "gw.kid": "\(Self.printable(skipped.kid ?? "-"))", "gw.reason": "\(skipped.reason)"]
            )
        }
        guard !parsed.keys.isEmpty else { throw AuthGateError(.keysUnavailable, "the key set has no usable \(algorithm.rawValue) key") }
        let lifetime = min(max(document.maxAge ?? Self.defaultLifetime, minimumLifetime), Self.maximumLifetime)
        let now = clock.now
        logger.info(
            "provider key set loaded",
            metadata: [
                "gw.provider": "\(provider)", "gw.kids": "\(parsed.keys.keys.sorted().joined(separator: ","))",
                "gw.fresh_for_s": "\(Int(lifetime.inSeconds))"
            ]
        )
        return Loaded(keys: parsed.keys, loadedAt: now, freshUntil: now + lifetime)
    }

    /// How long after a failed fetch the next one is tried: 2 s after the first failure, then 4 s, 8 s … up to 1 min.
    private var failureBackoff: Duration { Self.fetchBackoff(afterFailures: consecutiveFailures) }

    /// The wait before the next fetch of a provider's document (key set, discovery document) after
    /// `failures` failed in a row: 2 s after the first, then 4 s, 8 s … up to 1 min.
    static func fetchBackoff(afterFailures failures: Int) -> Duration {
        .seconds(min(60, 1 << min(max(failures, 0), 6)))
    }

    /// How long the background loop waits before its next refresh.
    private func nextRefreshDelay() -> Duration {
        guard let loaded, consecutiveFailures == 0 else { return failureBackoff }
        let remaining = loaded.freshUntil - clock.now
        // Refresh when 90 % of the lifetime has passed, and never busy-loop.
        let lifetime = loaded.freshUntil - loaded.loadedAt
        return max(.seconds(5), remaining - lifetime / 10)
    }

    /// A kid as it may appear in logs: printable ASCII, at most 64 characters.
    public static func printable(_ kid: String) -> String {
        String(kid.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" }.prefix(64).map(Character.init))
    }
}

extension ProviderKeySet: Service {
    /// Loads the set, then keeps it fresh until graceful shutdown.
    public func run() async throws {
        try? await refresh()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: await self.nextRefreshDelay())
                } catch {
                    return
                }
                try? await self.refresh()
            }
        }
    }
}
