#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where AuthGate keeps users, identities, sessions, nonces and replay windows.
///
/// Two implementations pass one conformance suite: ``MemoryAuthStore`` (one process, development
/// and tests) and ``RedisAuthStore`` (shared by every replica). Later capabilities (users,
/// sessions, replay guard) extend this protocol.
public protocol AuthStore: Sendable {
    /// A short name for logs and `/readyz` (`memory`, `redis`).
    var kind: String { get }

    /// Succeeds when the store can serve requests now.
    /// - Throws: ``AuthGateError`` with code ``AuthGateError/Code/storeUnavailable`` saying why not.
    func checkReadiness() async throws

    /// Records `key` until `expiresAt` unless it is already recorded: true when this call recorded
    /// it. Atomic across every replica sharing the store (replay windows, issued nonces).
    func insertIfAbsent(_ key: String, expiresAt: Date) async throws -> Bool

    /// Removes `key` and returns true when it was recorded and unexpired: true exactly once.
    func consume(_ key: String) async throws -> Bool
}
