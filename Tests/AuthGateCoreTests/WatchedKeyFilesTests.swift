import Foundation
import Synchronization
import Testing

@testable import AuthGateCore

@Suite("Watched key files")
struct WatchedKeyFilesTests {
    /// A configuration file in a fresh directory, and a key-file reader that counts its reads.
    final class Fixture: Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("watched-\(UUID().uuidString)").path
        var path: String { "\(directory)/authgate.yaml" }
        let reads = Atomic<Int>(0)
        let fails = Atomic<Bool>(false)

        init() throws { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func write(_ text: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }

        func watched() -> WatchedKeyFiles {
            WatchedKeyFiles(configurationPath: path) { [self] path in
                reads.add(1, ordering: .relaxed)
                if fails.load(ordering: .relaxed) { return nil }
                // One key file per line of the configuration: enough to see which version was read.
                return (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").map { "\(directory)/\($0)" }
            }
        }
    }

    @Test("the configuration is read again only when it changed, and then names the new key files")
    func readsOnlyOnChange() throws {
        let fixture = try Fixture()
        try fixture.write("a.pem")
        let watched = fixture.watched()
        #expect(watched.paths() == [fixture.path, "\(fixture.directory)/a.pem"])
        for _ in 0..<5 { #expect(watched.paths() == [fixture.path, "\(fixture.directory)/a.pem"]) }
        #expect(fixture.reads.load(ordering: .relaxed) == 1, "an unchanged configuration was parsed again")

        try fixture.write("a.pem\nb.pem")
        #expect(watched.paths() == [fixture.path, "\(fixture.directory)/a.pem", "\(fixture.directory)/b.pem"])
        #expect(watched.paths().count == 3)
        #expect(fixture.reads.load(ordering: .relaxed) == 2)
    }

    @Test("a configuration that does not load is watched alone and read again at the next check")
    func failedLoadIsNotKept() throws {
        let fixture = try Fixture()
        try fixture.write("a.pem")
        fixture.fails.store(true, ordering: .relaxed)
        let watched = fixture.watched()
        #expect(watched.paths() == [fixture.path])
        #expect(watched.paths() == [fixture.path])
        #expect(fixture.reads.load(ordering: .relaxed) == 2, "a failed read must not be cached")
        fixture.fails.store(false, ordering: .relaxed)
        #expect(watched.paths() == [fixture.path, "\(fixture.directory)/a.pem"])
    }
}
