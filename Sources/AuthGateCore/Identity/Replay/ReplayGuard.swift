#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Makes a provider ID token single-use: the first presentation records it in the store until
/// its `exp` plus the leeway (Redis `SET NX`, atomic across replicas); any later one is refused.
public struct ReplayGuard: Sendable {
    private let store: any AuthStore
    private let configuration: ReplayConfiguration

    public init(store: any AuthStore, configuration: ReplayConfiguration) {
        self.store = store
        self.configuration = configuration
    }

    /// Records the token as used.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/replayed`` when it was used before.
    public func claim(_ identity: VerifiedIdentity, now: Date) async throws {
        guard configuration.enabled else { return }
        let until = max(identity.expiresAt, now).addingTimeInterval(configuration.leeway.inSeconds)
        let key = "replay:\(identity.provider):\(identity.tokenHash)"
        guard try await store.insertIfAbsent(key, expiresAt: until) else {
            throw AuthGateError(.replayed, "this \(identity.provider) ID token was already used")
        }
    }
}
