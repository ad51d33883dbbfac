import ServiceLifecycle
import UnixSignals

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// When to reload files while the gateway runs: on SIGHUP, and when any of the watched files
/// changes (modification time or size, checked every `pollInterval`). Shared by the signing-key
/// and TLS certificate reloaders; returns at graceful shutdown.
public enum ReloadTrigger {
    /// Calls `reload` with the reason, until graceful shutdown.
    /// - Parameter paths: the files to watch (asked again on every check, so a changed
    ///   configuration can name new ones).
    public static func run(pollInterval: Duration, paths: @escaping @Sendable () -> [String], reload: @escaping @Sendable (String) -> Void)
        async throws
    {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in hangups { reload("SIGHUP") }
                }
                group.addTask {
                    var seen = fingerprint(paths())
                    while !Task.isCancelled {
                        try? await Task.sleep(for: pollInterval)
                        let now = fingerprint(paths())
                        if now != seen {
                            seen = now
                            reload("files changed")
                        }
                    }
                }
                await group.waitForAll()
            }
        }
    }

    /// Where each of `paths` leads (every symbolic link resolved), with that file's modification
    /// time and size. Resolving matters: a Kubernetes Secret volume replaces its files by
    /// re-pointing a `..data` link, so the link the configuration names keeps its own time and
    /// size while the file it leads to changes (`attributesOfItem` does not follow links).
    static func fingerprint(_ paths: [String]) -> [String] {
        paths.map { path in
            let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            let attributes = try? FileManager.default.attributesOfItem(atPath: target)
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            let size = (attributes?[.size] as? Int) ?? -1
            return "\(path)->\(target):\(modified):\(size)"
        }
    }
}
