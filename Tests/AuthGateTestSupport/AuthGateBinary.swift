public import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs the built `authgate` executable, as an operator would.
public enum AuthGateBinary {
    /// The executable beside the test bundle (`swift build` puts both in the same folder).
    public static func url() throws -> URL {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [directory, directory.deletingLastPathComponent()] {
            let binary = candidate.appendingPathComponent("authgate")
            if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
        }
        throw TestSupportError("the authgate executable is not built next to the tests; run `swift build --build-tests` (make test does)")
    }

    /// What a finished command printed and how it exited.
    public struct Result: Sendable {
        public let status: Int32
        public let standardOutput: String
        public let standardError: String
    }

    /// Runs `authgate <arguments>` to completion.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let process = Process()
        process.executableURL = try url()
        process.arguments = arguments
        process.environment = mergedEnvironment(environment)
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        let status = try await runToExit(process)
        return Result(
            status: status,
            standardOutput: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        )
    }

    /// The test process's environment without `AUTHGATE_…` variables, plus `extra`.
    static func mergedEnvironment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AUTHGATE_") }
        environment.merge(extra) { _, new in new }
        return environment
    }

    /// Starts `process` and waits (without blocking a thread) for it to exit.
    static func runToExit(_ process: Process) async throws -> Int32 {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationStatus)
            continuation.finish()
        }
        try process.run()
        for await status in stream { return status }
        return process.terminationStatus
    }
}

/// A running `authgate serve`, stopped by the test.
public final class AuthGateServer: Sendable {
    public let port: Int
    public let logFile: URL
    private let process: Process
    private let exit: Task<Int32, Never>

    /// Starts `authgate serve` with `arguments` and `environment` on a free port, and waits until
    /// `/health` answers (with `plainHTTP: false`, a TLS listener: until the port accepts connections).
    /// Standard output and error go to ``log``; standard error to `standardError` instead when given.
    public static func start(
        arguments: [String] = [], environment: [String: String] = [:], plainHTTP: Bool = true, standardError: FileHandle? = nil
    ) async throws -> AuthGateServer {
        let port = try freeLoopbackPort()
        let logFile = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-serve-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let process = Process()
        process.executableURL = try AuthGateBinary.url()
        process.arguments = ["serve"] + arguments
        process.environment = AuthGateBinary.mergedEnvironment(environment.merging(["AUTHGATE_SERVER_PORT": String(port)]) { _, new in new })
        let handle = try FileHandle(forWritingTo: logFile)
        process.standardOutput = handle
        process.standardError = standardError ?? handle
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationStatus)
            continuation.finish()
        }
        try ChildProcessLedger.launch(process)
        let exit = Task<Int32, Never> {
            for await status in stream { return status }
            return -1
        }
        let server = AuthGateServer(port: port, logFile: logFile, process: process, exit: exit)
        try await server.waitUntilHealthy(plainHTTP: plainHTTP)
        return server
    }

    private init(port: Int, logFile: URL, process: Process, exit: Task<Int32, Never>) {
        self.port = port
        self.logFile = logFile
        self.process = process
        self.exit = exit
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { HTTP.loopbackURL(port: port) }

    /// The server's process id.
    public var processIdentifier: Int32 { process.processIdentifier }

    /// The server's peak resident memory so far (`VmHWM` of `/proc/<pid>/status`), in bytes.
    public func peakResidentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { throw TestSupportError("no VmHWM in /proc/\(process.processIdentifier)/status") }
        return kilobytes * 1024
    }

    /// The CPU time the server has used so far (user and system, from `/proc/<pid>/stat`), in clock ticks.
    public func cpuTicks() throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        guard let close = stat.lastIndex(of: ")") else { throw TestSupportError("unreadable /proc/\(process.processIdentifier)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
            throw TestSupportError("unreadable /proc/\(process.processIdentifier)/stat")
        }
        return user + system
    }

    /// Whether the process is still running (a crash ends it).
    public var isRunning: Bool { process.isRunning }

    /// File descriptors the server has open now (`/proc/<pid>/fd`).
    public func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count
    }

    /// Everything the server has logged so far.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits for the exit status.
    public func stop(signal: Int32 = SIGTERM) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return await exit.value
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: logFile)
    }

    private func waitUntilHealthy(plainHTTP: Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        while clock.now < deadline {
            if !process.isRunning { throw TestSupportError("authgate serve exited at start:\n\(log)") }
            if !plainHTTP, (try? RawConnection(port: port)) != nil { return }
            if plainHTTP, let (_, response) = try? await HTTP.get(baseURL.appendingPathComponent("health")), response.statusCode == 200 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSupportError("authgate serve did not answer /health within 20 s:\n\(log)")
    }
}
