public import Foundation

/// A temporary directory for a test's `authgate serve`: a fresh ES256 key in `k1.pem` and the
/// configuration file, removed by ``remove()``.
public struct GatewayFiles: Sendable {
    public let directory: URL
    /// `authgate.yaml` in the directory.
    public let config: URL

    public init(_ name: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try TestKeys.es256PEM().write(to: directory.appendingPathComponent("k1.pem"), atomically: true, encoding: .utf8)
        config = directory.appendingPathComponent("authgate.yaml")
    }

    /// Writes the configuration (atomically: a watching gateway never reads half of it).
    public func writeConfig(_ yaml: String) throws {
        try yaml.write(to: config, atomically: true, encoding: .utf8)
    }

    /// The contents of `k1.pem`.
    public func keyPEM() throws -> String {
        try String(contentsOf: directory.appendingPathComponent("k1.pem"), encoding: .utf8)
    }

    public func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}
