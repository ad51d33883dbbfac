import Foundation
import Synchronization

/// Files and folders a test writes that must outlive the function writing them (a key set that a
/// verifier or a shared fixture reads later, a key folder every test of a suite shares): removed
/// when the test process exits, so a run leaves nothing in the temporary directory. A file a
/// single scope uses is removed by that scope instead (`defer`).
public enum RemovedAtExit {
    private static let paths = Mutex<[String]>([])

    /// One `atexit` handler for every path, installed with the first.
    private static let handlerInstalled: Void = {
        atexit {
            for path in RemovedAtExit.paths.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }()

    /// Removes `path` (a file or a folder with what it holds) when the process exits; returns it.
    @discardableResult
    public static func register(_ path: String) -> String {
        _ = handlerInstalled
        paths.withLock { $0.append(path) }
        return path
    }
}
