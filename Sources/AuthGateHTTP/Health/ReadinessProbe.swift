public import AuthGateCore

/// Decides whether this replica should get traffic: the store answers and the signing keys are
/// loaded. Later parts (provider key sets, the revocation feed) add their own checks.
public struct ReadinessProbe: Sendable {
    /// One named check's outcome.
    public struct Check: Sendable, Hashable {
        public let name: String
        public let isReady: Bool
        /// "ok", or why not (safe to show: no secrets, no internal addresses beyond the store's).
        public let detail: String
    }

    private let store: any AuthStore
    private let keyRing: SigningKeyRing?

    public init(store: any AuthStore, keyRing: SigningKeyRing?) {
        self.store = store
        self.keyRing = keyRing
    }

    /// Runs every check.
    public func run() async -> [Check] {
        var checks: [Check] = []
        do {
            try await store.checkReadiness()
            checks.append(Check(name: "store", isReady: true, detail: "ok (\(store.kind))"))
        } catch let error as AuthGateError {
            checks.append(Check(name: "store", isReady: false, detail: "\(store.kind) unavailable: \(error.message)"))
        } catch {
            checks.append(Check(name: "store", isReady: false, detail: "\(store.kind) unavailable"))
        }
        if let keyRing {
            let detail = "ok (active kid \(keyRing.activeKey.kid), \(keyRing.keys.count) key\(keyRing.keys.count == 1 ? "" : "s")\(keyRing.isGenerated ? ", generated for development" : ""))"
            checks.append(Check(name: "signing_keys", isReady: true, detail: detail))
        } else {
            checks.append(Check(name: "signing_keys", isReady: false, detail: "no signing keys loaded"))
        }
        return checks
    }
}
