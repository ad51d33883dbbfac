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

    /// The token's replay record: kept until its `exp` plus the leeway; nil when replay protection
    /// is off. Taken by ``IDTokenSignInVerifier/take(_:)`` or by the sign-in's lookup.
    public func mark(for identity: VerifiedIdentity, now: Date) -> SingleUseMarks.Mark? {
        guard configuration.enabled else { return nil }
        let until = max(identity.expiresAt, now).addingTimeInterval(configuration.leeway.inSeconds)
        return SingleUseMarks.Mark(key: "replay:\(identity.provider):\(identity.tokenHash)", expiresAt: until)
    }

    /// Records the mark unless it is already recorded: true when this call recorded it.
    public func record(_ mark: SingleUseMarks.Mark) async throws -> Bool {
        try await store.insertIfAbsent(mark.key, expiresAt: mark.expiresAt)
    }
}
