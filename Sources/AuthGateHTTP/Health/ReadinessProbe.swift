public import AuthGateCore
public import Logging
import NIOConcurrencyHelpers

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Decides whether this replica should get traffic: the store answers and the signing keys are
/// loaded. Provider key sets are reported too: a missing or stale set degrades sign-in with that
/// provider only (its tokens are refused, fail closed), so it marks the replica `degraded`, not
/// unready: sessions, refreshes and the proxy keep working.
public struct ReadinessProbe: Sendable {
    /// One named check's outcome.
    public struct Check: Sendable, Hashable {
        public let name: String
        public let isReady: Bool
        /// False for checks that degrade one feature rather than the replica.
        public let isCritical: Bool
        /// "ok", or why not (safe to show: no secrets, no internal addresses beyond the store's).
        public let detail: String
    }

    private let store: any AuthStore
    private let keys: SigningKeys?
    private let keySets: [ProviderKeySet]
    private let appleClientSecrets: AppleClientSecretMinter?
    private let tls: ServerTLSContext?

    private let logger: Logger
    /// The store's last answer about key eviction, and when it came: `/readyz` is often public
    /// and asked by anyone, and each answer costs Redis an `INFO`, so it is asked at most once per
    /// ``evictionRecheckInterval``.
    private let lastEviction = NIOLockedValueBox<(at: ContinuousClock.Instant, eviction: KeyEviction)?>(nil)
    /// How long an answer about key eviction is reused.
    static let evictionRecheckInterval = Duration.seconds(5)
    /// The clock the reuse is measured on (a test's own, to step it without waiting).
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(
        store: any AuthStore, keys: SigningKeys?, keySets: [ProviderKeySet] = [], appleClientSecrets: AppleClientSecretMinter? = nil,
        tls: ServerTLSContext? = nil, logger: Logger = Logger(label: "authgate"),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.now = now
        self.tls = tls
        self.logger = logger
        self.store = store
        self.keys = keys
        self.keySets = keySets
        self.appleClientSecrets = appleClientSecrets
    }

    /// Runs every check.
    public func run() async -> [Check] {
        var checks: [Check] = []
        do {
            try await store.checkReadiness()
            checks.append(Check(name: "store", isReady: true, isCritical: true, detail: "ok (\(store.kind))"))
        } catch let error as AuthGateError {
            // The cause (addresses, Redis's words) is for the log; /readyz is often public.
            // Once per 10 s: /readyz may be public, and is asked every few seconds anyway.
            if let repeated = OutageLog.admit("readiness store") {
                logger.warning("readiness: store unavailable", metadata: ["gw.error": "\(error.message)", "gw.repeated": "\(repeated)"])
            }
            checks.append(Check(name: "store", isReady: false, isCritical: true, detail: "\(store.kind) unavailable"))
        } catch {
            checks.append(Check(name: "store", isReady: false, isCritical: true, detail: "\(store.kind) unavailable"))
        }
        if checks.last?.isReady == true { checks.append(await evictionCheck()) }
        if let keyRing = keys?.current {
            let detail =
                "ok (active kid \(keyRing.activeKey.kid), \(keyRing.keys.count) key\(keyRing.keys.count == 1 ? "" : "s")\(keyRing.isGenerated ? ", generated for development" : ""))"
            checks.append(Check(name: "signing_keys", isReady: true, isCritical: true, detail: detail))
        } else {
            checks.append(Check(name: "signing_keys", isReady: false, isCritical: true, detail: "no signing keys loaded"))
        }
        for keySet in keySets {
            let status = await keySet.status()
            let age = status.ageSeconds.map { "loaded \(Int($0)) s ago" } ?? "never loaded"
            let detail: String
            if status.keyCount == 0 {
                detail = "no keys (\(age); \(status.lastError ?? "not fetched yet")): sign-in with \(status.provider) fails"
            } else if status.isStale {
                detail = "stale: \(status.keyCount) keys, \(age); refresh failing: \(status.lastError ?? "unknown error")"
            } else {
                detail = "ok (\(status.keyCount) keys, \(age))"
            }
            checks.append(
                Check(name: "provider_keys.\(status.provider)", isReady: status.keyCount > 0 && !status.isStale, isCritical: false, detail: detail))
        }
        if let appleClientSecrets { checks.append(appleCredentialsCheck(appleClientSecrets)) }
        if let tls {
            // Critical: with an expired certificate no client completes a handshake.
            let left = Int64(tls.notValidAfter.timeIntervalSinceNow.rounded(.down))
            GatewayMetrics.tlsCertificateExpiry(seconds: Double(left))
            checks.append(
                Check(
                    name: "server_tls", isReady: left > 0, isCritical: true,
                    detail: left > 0
                        ? "ok (certificate valid \(left) s more, until \(tls.notValidAfter))" : "the certificate expired at \(tls.notValidAfter)"
                ))
        }
        return checks
    }

    /// Whether the store may drop records on its own (``KeyEviction``). Critical: a Redis that
    /// evicts keys forgets single-use marks and revocations under memory pressure, where one that
    /// does not refuses writes (503: fail closed). Unknown (`INFO` refused) is ready, and logged.
    private func evictionCheck() async -> Check {
        let eviction: KeyEviction
        if let last = lastEviction.withLockedValue({ $0 }), now() - last.at < Self.evictionRecheckInterval {
            eviction = last.eviction
        } else {
            do {
                eviction = try await store.keyEviction()
            } catch {
                return Check(name: "store_eviction", isReady: false, isCritical: true, detail: "\(store.kind) unavailable")
            }
            // Stamped when the answer came: a slow INFO does not shorten its reuse.
            let answeredAt = now()
            lastEviction.withLockedValue { $0 = (answeredAt, eviction) }
        }
        switch eviction {
        case .never:
            return Check(name: "store_eviction", isReady: true, isCritical: true, detail: eviction.detail)
        case .possible:
            if let repeated = OutageLog.admit("readiness store eviction") {
                logger.error("readiness: the store may evict keys", metadata: ["gw.detail": "\(eviction.detail)", "gw.repeated": "\(repeated)"])
            }
            return Check(name: "store_eviction", isReady: false, isCritical: true, detail: eviction.detail)
        case .unknown(let why):
            // Why (Redis's own words, a user name) goes to the log only: /readyz may be public.
            if let repeated = OutageLog.admit("readiness store eviction unknown") {
                logger.warning(
                    "readiness: the store's eviction policy is unknown",
                    metadata: ["gw.error": "\(why)", "gw.detail": "\(eviction.detail)", "gw.repeated": "\(repeated)"])
            }
            return Check(name: "store_eviction", isReady: true, isCritical: true, detail: eviction.detail)
        }
    }

    /// Apple's REST API credentials: a client secret can be minted (for the first client id) and
    /// when the cached ones expire. Not critical: only calls to Apple depend on it.
    private func appleCredentialsCheck(_ minter: AppleClientSecretMinter) -> Check {
        let status = minter.status()
        let identifiers = "team \(status.teamID), key \(status.keyID), \(status.clientIDs.count) client id\(status.clientIDs.count == 1 ? "" : "s")"
        guard let clientID = status.clientIDs.first else {
            return Check(name: "apple_server_credentials", isReady: false, isCritical: false, detail: "\(identifiers): no client id to mint for")
        }
        do {
            let secret = try minter.clientSecret(for: clientID)
            let left = max(0, secret.expiresAt - Date().unixSeconds)
            return Check(
                name: "apple_server_credentials", isReady: true, isCritical: false,
                detail: "ok (\(identifiers); client secret valid \(left) s more, renewed at half life)")
        } catch {
            if let repeated = OutageLog.admit("readiness apple client secret") {
                logger.warning("readiness: no Apple client secret", metadata: ["gw.error": "\(error)", "gw.repeated": "\(repeated)"])
            }
            return Check(
                name: "apple_server_credentials", isReady: false, isCritical: false, detail: "\(identifiers): a client secret cannot be minted")
        }
    }
}
