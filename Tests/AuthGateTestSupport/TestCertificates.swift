import Foundation

/// A local certificate authority made at test time with the `openssl` command (P-256 keys,
/// certificates for 127.0.0.1 and localhost, valid two days), in a temporary directory.
public struct TestCertificates: Sendable {
    public let directory: String
    /// The CA certificate clients trust.
    public var caFile: String { directory + "/ca.pem" }

    /// Makes the CA.
    public init() async throws {
        directory = NSTemporaryDirectory() + "authgate-certs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", directory + "/ca.key", "-out",
            caFile, "-days", "2", "-subj", "/CN=AuthGate Test CA"
        ])
    }

    /// What a certificate is for.
    public enum Usage: String, Sendable {
        case server = "serverAuth"
        case client = "clientAuth"
    }

    /// Issues a certificate named `name` (`<name>.pem`, `<name>.key`) with common name
    /// `commonName`, for 127.0.0.1 and localhost (or the DNS names `dnsNames` instead).
    @discardableResult
    public func issue(_ name: String, commonName: String, usage: Usage = .server, dnsNames: [String] = ["localhost"], ipAddress: Bool = true)
        async throws -> (certificate: String, key: String)
    {
        let certificate = directory + "/\(name).pem"
        let key = directory + "/\(name).key"
        let extensions = directory + "/\(name).ext"
        let names = (ipAddress ? ["IP:127.0.0.1"] : []) + dnsNames.map { "DNS:\($0)" }
        try "subjectAltName=\(names.joined(separator: ","))\nextendedKeyUsage=\(usage.rawValue)\n".write(
            toFile: extensions, atomically: true, encoding: .utf8)
        try await Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", directory + "/\(name).csr",
            "-subj", "/CN=\(commonName)"
        ])
        try await Self.openssl([
            "x509", "-req", "-in", directory + "/\(name).csr", "-CA", caFile, "-CAkey", directory + "/ca.key", "-CAcreateserial", "-out",
            certificate, "-days", "2", "-extfile", extensions
        ])
        return (certificate, key)
    }

    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Runs `openssl` with `arguments`; throws with its output when it fails.
    @discardableResult
    public static func openssl(_ arguments: [String], input: String? = nil) async throws -> (status: Int32, output: String) {
        try await run("/usr/bin/openssl", arguments, input: input)
    }

    /// Runs a program to completion: its exit status and everything it printed (standard output
    /// and standard error together).
    public static func run(_ executable: String, _ arguments: [String], input: String? = nil, check: Bool = true) async throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let stdin = Pipe()
        process.standardInput = stdin
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationStatus)
            continuation.finish()
        }
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        // Read on a thread of its own: the read blocks until the program exits, and a blocked
        // cooperative thread (two on this machine) would hold up every test beside this one.
        let reader = output.fileHandleForReading
        let data = await withCheckedContinuation { (finished: CheckedContinuation<Data, Never>) in
            Thread { finished.resume(returning: reader.readDataToEndOfFile()) }.start()
        }
        var status: Int32 = -1
        for await value in stream { status = value }
        let text = String(decoding: data, as: UTF8.self)
        if check, status != 0 { throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) exited \(status):\n\(text)") }
        return (status, text)
    }
}
