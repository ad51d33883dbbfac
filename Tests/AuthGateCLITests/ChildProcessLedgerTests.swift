import Foundation
import Testing

@testable import AuthGateTestSupport

/// Servers a crashed test process left running are ended by the next one, and only those.
@Suite("Servers left by a crashed test process")
struct ChildProcessLedgerTests {
    private func sleeper() throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["300"]
        try process.run()
        return process
    }

    @Test("a child whose test process is gone is ended; one whose test process lives, or whose pid now runs another program, is left")
    func reapsOrphans() throws {
        // A test process that is gone: the pid of a process that has exited.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let orphan = try sleeper()
        let adopted = try sleeper()
        let reused = try sleeper()
        // A ledger of its own: this process's first server launch, perhaps by a test running at
        // this moment, settles the shared one (and once ended this test's orphan under it).
        let ledger = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-ledger-test-\(UUID().uuidString)")
        defer {
            for process in [orphan, adopted, reused] where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: ledger)
        }
        let sleep = URL(fileURLWithPath: "/bin/sleep").resolvingSymlinksInPath().path
        #expect(ChildProcessLedger.executable(of: orphan.processIdentifier) == sleep)
        ChildProcessLedger.record(orphan.processIdentifier, executable: sleep, parent: gone.processIdentifier, in: ledger)
        ChildProcessLedger.record(adopted.processIdentifier, executable: sleep, in: ledger)
        ChildProcessLedger.record(reused.processIdentifier, executable: "/usr/bin/redis-server", parent: gone.processIdentifier, in: ledger)

        let ended = ChildProcessLedger.reapOrphans(in: ledger)
        #expect(ended.contains(orphan.processIdentifier))
        #expect(!ended.contains(adopted.processIdentifier) && !ended.contains(reused.processIdentifier))
        orphan.waitUntilExit()
        #expect(orphan.terminationReason == .uncaughtSignal && orphan.terminationStatus == SIGKILL)
        #expect(adopted.isRunning && reused.isRunning)
        // The settled entries are gone; the live test process's entry stays.
        let entries = Set((try? FileManager.default.contentsOfDirectory(atPath: ledger.path)) ?? [])
        #expect(entries.count == 1)
        #expect(!entries.contains(String(orphan.processIdentifier)) && !entries.contains(String(reused.processIdentifier)))
        #expect(entries.contains(String(adopted.processIdentifier)))
    }

    @Test("a server started through the ledger has an entry while it runs, and none once it exits")
    func entryFollowsTheChild() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["300"]
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try ChildProcessLedger.launch(process)
        let entry = ChildProcessLedger.directory.appendingPathComponent(String(process.processIdentifier)).path
        #expect(FileManager.default.fileExists(atPath: entry))
        #expect(
            (try? String(contentsOfFile: entry, encoding: .utf8))
                == "\(getpid()) \(URL(fileURLWithPath: "/bin/sleep").resolvingSymlinksInPath().path)")
        kill(process.processIdentifier, SIGKILL)
        exited.wait()
        #expect(!FileManager.default.fileExists(atPath: entry))
    }
}
