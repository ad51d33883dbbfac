import Synchronization

/// A clock that moves only when told: code that takes `now: () -> ContinuousClock.Instant` is
/// tested across its time windows without waiting for them.
public final class ManualClock: Sendable {
    private let offset = Mutex(Duration.zero)
    private let base = ContinuousClock.now

    public init() {}

    /// The instant the clock shows.
    public var now: ContinuousClock.Instant { base + offset.withLock { $0 } }

    /// Moves the clock on.
    public func advance(_ by: Duration) { offset.withLock { $0 += by } }
}
