import Synchronization

/// The signing keys in force, replaceable while the gateway runs (key rotation): every minting,
/// verification and JWKS answer reads the current ring, so a reload takes effect at once without
/// dropping a connection.
public final class SigningKeys: Sendable {
    private let state: Mutex<(ring: SigningKeyRing, generation: Int)>
    private let listeners = Mutex<[@Sendable (SigningKeyRing) -> Void]>([])

    public init(_ ring: SigningKeyRing) {
        state = Mutex((ring, 0))
    }

    /// The ring in force.
    public var current: SigningKeyRing { state.withLock { $0.ring } }

    /// The ring in force and how many times it was replaced (for caches derived from it).
    public var versioned: (ring: SigningKeyRing, generation: Int) { state.withLock { $0 } }

    /// Puts `ring` in force and tells the listeners.
    public func replace(with ring: SigningKeyRing) {
        state.withLock { $0 = (ring, $0.generation + 1) }
        for listener in listeners.withLock({ $0 }) { listener(ring) }
    }

    /// Calls `listener` after every replacement (the proxy forgets the tokens it verified).
    public func onReplace(_ listener: @escaping @Sendable (SigningKeyRing) -> Void) {
        listeners.withLock { $0.append(listener) }
    }
}
