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
}
