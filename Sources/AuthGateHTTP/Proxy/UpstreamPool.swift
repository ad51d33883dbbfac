public import AuthGateCore
import NIOCore
import Synchronization

/// A route's upstreams: round-robin, skipping any that failed to connect in the last
/// `quarantine` (passive health). Lock-free: every proxied request asks it, from every event loop.
public final class UpstreamPool: Sendable {
    /// One upstream and its health.
    final class Member: Sendable {
        let upstream: RouteConfiguration.Upstream
        /// The `Host` the upstream receives, made once.
        let hostHeader: String
        /// Until when (NIO uptime nanoseconds) the upstream is skipped; 0 when healthy.
        let failedUntil = Atomic<UInt64>(0)

        init(_ upstream: RouteConfiguration.Upstream) {
            self.upstream = upstream
            self.hostHeader = EdgeProxy.hostHeader(upstream)
        }
    }

    let members: [Member]
    private let cursor = Atomic<UInt>(0)
    private let quarantine: UInt64

    public init(_ upstreams: [RouteConfiguration.Upstream], quarantine: Duration = .seconds(10)) {
        self.members = upstreams.map(Member.init)
        self.quarantine = UInt64(max(0, quarantine.nanoseconds))
    }

    /// The next upstream to try, other than `excluding`: a healthy one if any, else the next in turn.
    public func next(excluding: Int? = nil) -> (index: Int, upstream: RouteConfiguration.Upstream)? {
        guard let index = nextIndex(excluding: excluding) else { return nil }
        return (index, members[index].upstream)
    }

    /// The index of ``next(excluding:)``.
    func nextIndex(excluding: Int? = nil) -> Int? {
        guard !members.isEmpty else { return nil }
        let start = Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(members.count))
        if members.count == 1 { return excluding == 0 ? nil : 0 }
        let now = NIODeadline.now().uptimeNanoseconds
        var fallback: Int?
        for offset in 0..<members.count {
            let index = (start + offset) % members.count
            if index == excluding { continue }
            if members[index].failedUntil.load(ordering: .relaxed) > now {
                fallback = fallback ?? index
                continue
            }
            return index
        }
        return fallback
    }

    /// Records a connect failure: the upstream is skipped for the quarantine period.
    public func markFailed(_ index: Int) {
        guard members.indices.contains(index) else { return }
        members[index].failedUntil.store(NIODeadline.now().uptimeNanoseconds + quarantine, ordering: .relaxed)
    }

    /// Records a success: the upstream is healthy again.
    public func markHealthy(_ index: Int) {
        guard members.indices.contains(index), members[index].failedUntil.load(ordering: .relaxed) != 0 else { return }
        members[index].failedUntil.store(0, ordering: .relaxed)
    }
}
