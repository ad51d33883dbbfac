import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The process's open-file limit, raised at start so that `server.max_connections` and
/// `proxy.max_websocket_tunnels` can be reached before the kernel refuses descriptors (each
/// proxied client connection may hold an upstream connection too, and each tunnel one of its
/// own), as nginx's `worker_rlimit_nofile` does.
enum FileDescriptorLimit {
    /// Descriptors needed for `maxConnections` clients, their upstream connections, `maxTunnels`
    /// WebSocket tunnels' upstream connections, and the gateway's own (Redis, key sets, listeners).
    static func needed(forConnections maxConnections: Int, tunnels maxTunnels: Int) -> UInt64 {
        let (clients, _) = UInt64(maxConnections).multipliedReportingOverflow(by: 2)
        let (total, overflow) = clients.addingReportingOverflow(UInt64(max(0, maxTunnels)) + 1024)
        return overflow ? .max : total
    }

    /// Raises the soft limit toward `needed` (up to the hard limit); warns when even the hard
    /// limit is lower, because clients past it would be refused by the kernel, not answered 503.
    static func raise(toAtLeast needed: UInt64, logger: Logger) {
        #if canImport(Glibc)
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
            let wanted = rlim_t(clamping: needed)
            guard limit.rlim_cur < wanted else { return }
            let target = min(wanted, limit.rlim_max)
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 { raised.rlim_cur = limit.rlim_cur }
            if raised.rlim_cur < wanted {
                logger.warning(
                    "the open-file limit is below what server.max_connections and proxy.max_websocket_tunnels need; lower them or raise the limit (LimitNOFILE, ulimit -n)",
                    metadata: ["gw.nofile": "\(raised.rlim_cur)", "gw.needed": "\(needed)"]
                )
            }
        #endif
    }
}
