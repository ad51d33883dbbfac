#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// How many event loops the process should run: one per CPU it is allowed to run on.
///
/// NIO sizes its singleton group by the machine's cores, so a gateway pinned to one core (taskset,
/// a container cpuset) would run two loops that preempt each other on every hop between them.
public enum EventLoopSizing {
    /// The number of CPUs in this process's affinity mask (`Cpus_allowed_list` of
    /// `/proc/self/status`), or nil where that cannot be read.
    public static func allowedCPUCount(status path: String = "/proc/self/status") -> Int? {
        guard let status = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Cpus_allowed_list:") {
            return cpuCount(list: line.dropFirst("Cpus_allowed_list:".count))
        }
        return nil
    }

    /// The number of CPUs in a Linux CPU list such as `0-3,8,10-11`, or nil if it is malformed.
    public static func cpuCount(list: Substring) -> Int? {
        var total = 0
        for part in list.split(separator: ",") {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false).map { Int($0.filter { !$0.isWhitespace }) }
            switch bounds.count {
            case 1:
                guard bounds[0] != nil else { return nil }
                total += 1
            case 2:
                guard let low = bounds[0], let high = bounds[1], low <= high else { return nil }
                total += high - low + 1
            default:
                return nil
            }
        }
        return total > 0 ? total : nil
    }

    /// Sets `NIO_SINGLETON_GROUP_LOOP_COUNT` to the allowed CPU count unless it is already set.
    /// Must run before anything touches NIO's singleton event loop group.
    public static func limitEventLoopsToAllowedCPUs() {
        guard let count = allowedCPUCount() else { return }
        setenv("NIO_SINGLETON_GROUP_LOOP_COUNT", String(count), 0)
    }
}
