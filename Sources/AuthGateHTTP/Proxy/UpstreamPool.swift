public import AuthGateCore
import Synchronization

/// A route's upstreams: round-robin, skipping any that failed to connect in the last
/// `quarantine` seconds (passive health).
public final class UpstreamPool: Sendable {
    private let upstreams: [RouteConfiguration.Upstream]
    private let state = Mutex<(next: Int, failedUntil: [ContinuousClock.Instant?])>((0, []))
    private let quarantine: Duration

    public init(_ upstreams: [RouteConfiguration.Upstream], quarantine: Duration = .seconds(10)) {
        self.upstreams = upstreams
        self.quarantine = quarantine
        state.withLock { $0.failedUntil = Array(repeating: nil, count: upstreams.count) }
    }

    /// The next upstream to try, other than `excluding`: a healthy one if any, else the next in turn.
    public func next(excluding: Int? = nil) -> (index: Int, upstream: RouteConfiguration.Upstream)? {
        guard !upstreams.isEmpty else { return nil }
        let now = ContinuousClock.now
        return state.withLock { state in
            let start = state.next
            state.next = (state.next + 1) % upstreams.count
            var fallback: Int?
            for offset in 0..<upstreams.count {
                let index = (start + offset) % upstreams.count
                if index == excluding { continue }
                if let until = state.failedUntil[index], until > now {
                    fallback = fallback ?? index
                    continue
                }
                return (index, upstreams[index])
            }
            return fallback.map { ($0, upstreams[$0]) }
        }
    }

    /// Records a connect failure: the upstream is skipped for the quarantine period.
    public func markFailed(_ index: Int) {
        let until = ContinuousClock.now + quarantine
        state.withLock { $0.failedUntil[index] = until }
    }

    /// Records a success: the upstream is healthy again.
    public func markHealthy(_ index: Int) {
        state.withLock { $0.failedUntil[index] = nil }
    }
}
