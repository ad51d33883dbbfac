import Foundation

/// A throwaway nginx (Debian's, which `make test` installs) on a free loopback port with its own
/// temporary directory; `locations` is the body of its one `server` block.
public final class NginxServer: Sendable {
    public let port: Int
    private let directory: URL
    private let process: Process

    private let tls: Bool

    /// `http://127.0.0.1:<port>` (`https://` with TLS).
    public var url: String { "\(tls ? "https" : "http")://127.0.0.1:\(port)" }

    /// Starts nginx; with `tls` (PEM certificate and key) it serves HTTPS only, and with
    /// `tls.clientCAFile` it asks for a client certificate from that CA and answers 400 without one.
    public static func start(locations: String, tls: (certificate: String, key: String, clientCAFile: String?)? = nil) async throws
        -> NginxServer
    {
        guard let executable = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw TestSupportError("nginx is not installed; make test installs nginx-light")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try freeLoopbackPort()
        let configuration = directory.appendingPathComponent("nginx.conf")
        try """
        worker_processes 1;
        daemon off;
        master_process off;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/error.log;
        events { worker_connections 1024; }
        http {
            access_log off;
            client_body_temp_path \(directory.path)/body;
            proxy_temp_path \(directory.path)/proxy;
            fastcgi_temp_path \(directory.path)/fastcgi;
            uwsgi_temp_path \(directory.path)/uwsgi;
            scgi_temp_path \(directory.path)/scgi;
            server {
                listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl");
                \(tls.map { "ssl_certificate \($0.certificate); ssl_certificate_key \($0.key);" } ?? "")
                \(tls?.clientCAFile.map { "ssl_client_certificate \($0); ssl_verify_client on;" } ?? "")
                \(locations)
            }
        }

        """.write(to: configuration, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-p", directory.path, "-c", configuration.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcessLedger.launch(process)
        let server = NginxServer(port: port, directory: directory, process: process, tls: tls != nil)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while (try? RawConnection(port: port)) == nil {
            guard process.isRunning, clock.now < deadline else {
                server.stop()
                throw TestSupportError("nginx did not listen on \(port) within 10 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return server
    }

    private init(port: Int, directory: URL, process: Process, tls: Bool) {
        self.tls = tls
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Stops nginx (SIGKILL: it keeps nothing) and removes its directory.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
