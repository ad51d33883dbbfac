import Foundation

/// The servers tests start (`authgate serve`, `redis-server`, nginx), written down so that the
/// next test process can end the ones a crashed one left running.
///
/// A test process that crashes never runs its `stop()`s, and its servers, reparented to init,
/// keep their ports and a little CPU for as long as the machine runs (two `authgate serve` from a
/// crashed run were found an hour later, idling beside a benchmark). The kernel's parent-death
/// signal cannot be used instead: it follows the thread that spawned the child, and the dispatch
/// threads that tests run on are retired when idle, which would kill live servers mid-test.
///
/// Each entry is a file named by the child's pid in a directory under the temporary directory,
/// holding the pid of the test process that started it and the child's executable. The first
/// launch in a process ends every recorded child whose test process is gone and which still runs
/// the recorded executable (so a reused pid is left alone), and removes the entries it settles.
enum ChildProcessLedger {
    /// Where the entries live.
    static var directory: URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("authgate-test-children", isDirectory: true)
    }

    /// Runs `process`, with an entry for it while it runs: removed when it exits.
    static func launch(_ process: Process) throws {
        _ = reapedOnce
        let earlier = process.terminationHandler
        process.terminationHandler = { finished in
            forget(finished.processIdentifier)
            earlier?(finished)
        }
        try process.run()
        record(process.processIdentifier, executable: process.executableURL?.resolvingSymlinksInPath().path ?? "")
    }

    /// Ends the children of test processes that are gone; once per process, before its first launch.
    private static let reapedOnce: Void = { _ = reapOrphans() }()

    /// Ends every recorded child whose test process is gone and which still runs the recorded
    /// executable, and removes the entries of children that are gone or ended. `directory`: the
    /// ledger's (another for tests of the ledger itself, which a test process's first launch,
    /// running at the same moment, would otherwise settle under them).
    /// - Returns: the pids it ended.
    @discardableResult
    static func reapOrphans(in directory: URL = directory) -> [Int32] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var ended: [Int32] = []
        for name in names {
            let entry = directory.appendingPathComponent(name)
            guard let child = Int32(name), child > 1, let text = try? String(contentsOf: entry, encoding: .utf8) else {
                try? FileManager.default.removeItem(at: entry)
                continue
            }
            let fields = text.split(separator: " ", maxSplits: 1).map(String.init)
            guard fields.count == 2, let parent = Int32(fields[0]), parent > 1 else {
                try? FileManager.default.removeItem(at: entry)
                continue
            }
            if isAlive(parent) { continue }
            if executable(of: child) == fields[1] {
                kill(child, SIGKILL)
                ended.append(child)
            }
            try? FileManager.default.removeItem(at: entry)
        }
        return ended
    }

    static func record(_ child: Int32, executable: String, parent: Int32 = getpid(), in directory: URL = directory) {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try? "\(parent) \(executable)".write(to: directory.appendingPathComponent(String(child)), atomically: true, encoding: .utf8)
    }

    static func forget(_ child: Int32, in directory: URL = directory) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(String(child)))
    }

    private static func isAlive(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// The executable `pid` runs (`/proc/<pid>/exe`, without the ` (deleted)` the kernel adds once
    /// the file was replaced, as a rebuild does), nil when there is no such process.
    static func executable(of pid: Int32) -> String? {
        guard var path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe") else { return nil }
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return path
    }
}
