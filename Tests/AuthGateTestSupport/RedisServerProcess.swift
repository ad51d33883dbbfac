public import Foundation
import NIOCore
import NIOPosix
public import RedisBridge
import Synchronization

/// Runs `body` with a private `redis-server` (started with `extraArguments`), stopping it
/// afterwards whether `body` threw or not.
public func withRedisServer<T>(extraArguments: [String] = [], _ body: (RedisServerProcess) async throws -> T) async throws -> T {
    let server = try await RedisServerProcess.start(extraArguments: extraArguments)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// A throwaway `redis-server` for tests: its own loopback port and temporary directory, no
/// persistence, started and stopped by the test that needs it.
///
/// Tests that must kill and restart Redis (outage tests) use their own instance; the rest may share
/// the one `make test` starts, found through `AUTHGATE_TEST_REDIS_URL`, with ``shared()``.
public final class RedisServerProcess: Sendable {
    public let port: Int
    public let directory: URL
    /// Appended to the command line (later options win: `--appendonly yes`, `--replicaof …`).
    private let extraArguments: [String]
    /// Set for a Sentinel: its configuration file (which Sentinel rewrites).
    private let sentinelConfiguration: URL?
    /// Set for a TLS-only server: `port` is its TLS port.
    private let tls: Bool
    private let running = Mutex<RunningServer?>(nil)

    private struct RunningServer {
        let process: Process
        let exited: Task<Void, Never>
    }

    /// The URL clients use to reach this server.
    public var url: RedisURL { RedisURL(host: "127.0.0.1", port: port, tls: tls) }

    /// Starts a server on a free loopback port and waits until it accepts connections.
    public static func start(extraArguments: [String] = []) async throws -> RedisServerProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let server = RedisServerProcess(
            port: try freeLoopbackPort(), directory: directory, extraArguments: extraArguments, sentinelConfiguration: nil, tls: false)
        try await server.start()
        return server
    }

    /// Starts a server that speaks only TLS on its port, with `certificate` and `key` (PEM);
    /// with `clientCAFile`, clients must show a certificate from that CA.
    public static func startTLS(certificate: String, key: String, clientCAFile: String?) async throws -> RedisServerProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-redis-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try freeLoopbackPort()
        var arguments = ["--port", "0", "--tls-port", String(port), "--tls-cert-file", certificate, "--tls-key-file", key]
        if let clientCAFile {
            arguments += ["--tls-ca-cert-file", clientCAFile, "--tls-auth-clients", "yes"]
        } else {
            arguments += ["--tls-ca-cert-file", certificate, "--tls-auth-clients", "no"]
        }
        let server = RedisServerProcess(port: port, directory: directory, extraArguments: arguments, sentinelConfiguration: nil, tls: true)
        try await server.start()
        return server
    }

    /// Starts a Sentinel watching `masterName` at `masterPort` (quorum `quorum`, down after 1 s);
    /// with `tls` (PEM certificate, key and the CA it trusts) it speaks only TLS, to clients and to
    /// the servers it watches.
    public static func startSentinel(
        masterName: String, masterPort: Int, quorum: Int, tls: (certificate: String, key: String, caFile: String)? = nil
    ) async throws -> RedisServerProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-sentinel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try freeLoopbackPort()
        let configuration = directory.appendingPathComponent("sentinel.conf")
        let listen =
            tls.map {
                """
                port 0
                tls-port \(port)
                tls-cert-file \($0.certificate)
                tls-key-file \($0.key)
                tls-ca-cert-file \($0.caFile)
                tls-auth-clients no
                tls-replication yes
                """
            } ?? "port \(port)"
        try """
        \(listen)
        bind 127.0.0.1
        dir \(directory.path)
        logfile \(directory.appendingPathComponent("redis.log").path)
        sentinel monitor \(masterName) 127.0.0.1 \(masterPort) \(quorum)
        sentinel down-after-milliseconds \(masterName) 1000
        sentinel failover-timeout \(masterName) 5000
        sentinel parallel-syncs \(masterName) 1

        """.write(to: configuration, atomically: true, encoding: .utf8)
        let server = RedisServerProcess(
            port: port, directory: directory, extraArguments: [], sentinelConfiguration: configuration, tls: tls != nil)
        try await server.start()
        return server
    }

    private init(port: Int, directory: URL, extraArguments: [String], sentinelConfiguration: URL?, tls: Bool) {
        self.tls = tls
        self.port = port
        self.directory = directory
        self.extraArguments = extraArguments
        self.sentinelConfiguration = sentinelConfiguration
    }

    /// Starts (or restarts) the server process on the same port.
    public func start() async throws {
        let process = Process()
        process.executableURL = try Self.redisServerExecutable()
        if let sentinelConfiguration {
            // Debian's redis-sentinel (make test installs it); redis-server --sentinel is the same program.
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-sentinel") {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-sentinel")
                process.arguments = [sentinelConfiguration.path]
            } else {
                process.arguments = [sentinelConfiguration.path, "--sentinel"]
            }
        } else {
            process.arguments =
                [
                    "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning", "--logfile",
                    directory.appendingPathComponent("redis.log").path
                ] + extraArguments
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let (exitStream, exitContinuation) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in exitContinuation.finish() }
        try ChildProcessLedger.launch(process)
        let exited = Task { for await _ in exitStream {} }
        running.withLock { $0 = RunningServer(process: process, exited: exited) }
        try await waitUntilReachable(process: process)
    }

    /// The running server's process id.
    public var processIdentifier: Int32? { running.withLock { $0?.process.processIdentifier } }

    /// Kills the server (SIGKILL, like a crash) and waits until the process has exited.
    public func kill() async {
        await signal(SIGKILL)
    }

    /// Freezes the server (SIGSTOP): it neither answers nor replicates until ``resume()``.
    public func pause() {
        if let pid = processIdentifier { Foundation.kill(pid, SIGSTOP) }
    }

    /// Lets a paused server run again (SIGCONT).
    public func resume() {
        if let pid = processIdentifier { Foundation.kill(pid, SIGCONT) }
    }

    /// Stops the server, waits for it to exit, and removes its directory.
    ///
    /// It uses SIGKILL: the server keeps nothing worth saving, and a child spawned by Foundation's
    /// `Process` from a dispatch thread inherits that thread's blocked signal mask, so SIGTERM
    /// would stay pending forever.
    public func stop() async {
        await signal(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    private func signal(_ signal: Int32) async {
        guard
            let server = running.withLock({ state -> RunningServer? in
                defer { state = nil }
                return state
            })
        else { return }
        if server.process.isRunning { Foundation.kill(server.process.processIdentifier, signal) }
        await server.exited.value
    }

    deinit {
        running.withLock { state in
            if let process = state?.process, process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        }
    }

    private func waitUntilReachable(process: Process) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            guard process.isRunning else {
                throw TestSupportError("redis-server exited at start (port \(port)); see \(directory.path)/redis.log")
            }
            if Self.canConnect(port: port) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSupportError("redis-server did not accept connections on port \(port) within 10 s")
    }

    /// Whether the server accepts a connection: through ``RawConnection``, whose connect gives up
    /// after 5 s. A blocking connect here held one of Swift concurrency's two threads for as long
    /// as the kernel retransmits a dropped SYN (about 31 s).
    private static func canConnect(port: Int) -> Bool {
        (try? RawConnection(port: port)) != nil
    }

    private static func redisServerExecutable() throws -> URL {
        for path in ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw TestSupportError("redis-server is not installed: run `make test` (it installs it) or `apt-get install redis-server`")
    }
}

/// The Redis every integration test may share: the one `make test` started
/// (`AUTHGATE_TEST_REDIS_URL`), or one started for this test process.
public enum SharedRedis {
    private static let started = Task { () throws -> RedisServerProcess in
        let server = try await RedisServerProcess.start()
        startedPID.withLock { $0 = server.processIdentifier }
        atexit { SharedRedis.stopAtExit() }
        return server
    }
    private static let startedPID = Mutex<Int32?>(nil)

    /// Kills the server this process started when the test process exits, so none is left behind.
    private static func stopAtExit() {
        if let pid = startedPID.withLock({ $0 }) { kill(pid, SIGKILL) }
    }

    /// The shared server's URL.
    public static func url() async throws -> RedisURL {
        _ = EventLoopLagWatch.started
        if let text = ProcessInfo.processInfo.environment["AUTHGATE_TEST_REDIS_URL"], !text.isEmpty {
            return try RedisURL(parsing: text)
        }
        return try await started.value.url
    }
}

/// A free TCP port on 127.0.0.1 that nothing else on this machine will be given.
///
/// A port the kernel picks for `bind(0)` comes from the ephemeral range, which it hands out again
/// to every listener bound to port 0 and to the source end of every outgoing connection: between
/// this call and the test's own bind, another test's gateway or client could take it (a Sentinel
/// test saw "Address already in use"), and a port meant to be dead could start answering. So the
/// port comes from below the ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), each one
/// handed out once per process, starting at an offset drawn from the process id, and checked free
/// by binding it.
public func freeLoopbackPort() throws -> Int {
    let candidates = LoopbackPorts.candidates
    for _ in 0..<candidates.count {
        let port = LoopbackPorts.next()
        if LoopbackPorts.canBind(port) { return port }
    }
    throw TestSupportError("no free loopback port in \(candidates)")
}

/// The ports ``freeLoopbackPort()`` hands out: outside the kernel's ephemeral range, in turn.
private enum LoopbackPorts {
    /// Ports no `bind(0)` and no outgoing connection is given.
    static let candidates: Range<Int> = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        let low = bounds.first ?? 32768
        let high = bounds.count > 1 ? bounds[1] : 60999
        if low - 10000 >= 4000 { return 10000..<low }
        return (high + 1)..<65536
    }()
    private static let counter = Atomic<Int>(Int(getpid()) &* 7919)

    static func next() -> Int {
        let turn = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        let offset = ((turn % candidates.count) + candidates.count) % candidates.count
        return candidates.lowerBound + offset
    }

    static func canBind(_ port: Int) -> Bool {
        withLoopbackSocket(port: port) { descriptor, address, length in bind(descriptor, address, length) == 0 }
    }
}

/// Runs `body` with a new TCP socket and the address 127.0.0.1:`port` (the socket is closed
/// afterwards); false when no socket could be made.
private func withLoopbackSocket(port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool) -> Bool {
    let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketDescriptor >= 0 else { return false }
    defer { close(socketDescriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// An error raised by test support code, with a message that says what to do.
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
