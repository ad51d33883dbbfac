public import AuthGateCore
public import Logging

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

    private let logger: Logger

    public init(store: any AuthStore, keys: SigningKeys?, keySets: [ProviderKeySet] = [], logger: Logger = Logger(label: "authgate")) {
        self.logger = logger
        self.store = store
        self.keys = keys
        self.keySets = keySets
    }

    /// Runs every check.
    public func run() async -> [Check] {
        var checks: [Check] = []
        do {
            try await store.checkReadiness()
            checks.append(Check(name: "store", isReady: true, isCritical: true, detail: "ok (\(store.kind))"))
        } catch let error as AuthGateError {
            // The cause (addresses, Redis's words) is for the log; /readyz is often public.
            logger.warning("readiness: store unavailable", metadata: ["gw.error": "\(error.message)"])
            checks.append(Check(name: "store", isReady: false, isCritical: true, detail: "\(store.kind) unavailable"))
        } catch {
            checks.append(Check(name: "store", isReady: false, isCritical: true, detail: "\(store.kind) unavailable"))
        }
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
        return checks
    }
}
