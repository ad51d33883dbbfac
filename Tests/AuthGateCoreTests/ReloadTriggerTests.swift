import Foundation
import Testing

@testable import AuthGateCore

@Suite("Reload trigger")
struct ReloadTriggerTests {
    @Test("a Kubernetes Secret update (the ..data link re-pointed) changes the fingerprint of the path the configuration names")
    func secretVolumeSwap() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let manager = FileManager.default
        // The layout the kubelet writes: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>.
        func version(_ name: String, _ content: String) throws {
            try manager.createDirectory(atPath: "\(directory)/\(name)", withIntermediateDirectories: true)
            try content.write(toFile: "\(directory)/\(name)/tls.crt", atomically: true, encoding: .utf8)
        }
        try version("..2026_11_23_01", "certificate A")
        try manager.createSymbolicLink(atPath: "\(directory)/..data", withDestinationPath: "..2026_11_23_01")
        try manager.createSymbolicLink(atPath: "\(directory)/tls.crt", withDestinationPath: "..data/tls.crt")
        let path = "\(directory)/tls.crt"
        let before = ReloadTrigger.fingerprint([path])
        #expect(ReloadTrigger.fingerprint([path]) == before, "the fingerprint must be stable while nothing changes")

        // The update: a new timestamped directory (same size, so only the link tells), then the
        // ..data link replaced in one rename.
        try version("..2026_11_23_02", "certificate B")
        try manager.createSymbolicLink(atPath: "\(directory)/..data_tmp", withDestinationPath: "..2026_11_23_02")
        #expect(rename("\(directory)/..data_tmp", "\(directory)/..data") == 0)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "certificate B")
        #expect(ReloadTrigger.fingerprint([path]) != before, "the swap went unnoticed: \(before)")
    }
}
