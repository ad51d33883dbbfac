import AuthGateCore
import AuthGateHTTP
import AuthGateTestSupport
import Foundation
import Testing

/// `server.tls` on the real binary, with certificates from a local CA made at test time: curl and
/// openssl over TLS 1.2 and 1.3, certificate rotation without a restart, and refusals at start.
@Suite("TLS on the listener", .serialized, .timeLimit(.minutes(3)))
struct TLSListenerTests {
    private func config(_ files: GatewayFiles, certificate: String, key: String, extra: String = "", server: String = "") throws {
        try files.writeConfig(
            """
            server: { host: 127.0.0.1\(server), tls: { certificate_chain_file: "\(certificate)", private_key_file: "\(key)"\(extra) } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers: { anonymous: { enabled: true } }
            logging: { level: warning }
            """)
    }

    /// Runs `body` against a gateway serving TLS with a certificate for `<name>.test` from a new
    /// test CA (`tls` added to `server.tls`, `server` to `server`); stops it whatever happens.
    private func withTLSGateway(
        _ name: String, tls: String = "", server extra: String = "", _ body: (AuthGateServer, TestCertificates) async throws -> Void
    ) async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let issued = try await certificates.issue("server", commonName: "\(name).test")
        let files = try GatewayFiles(name)
        defer { files.remove() }
        try config(files, certificate: issued.certificate, key: issued.key, extra: tls, server: extra)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], plainHTTP: false)
        do {
            try await body(server, certificates)
        } catch {
            _ = await server.stop()
            throw error
        }
        #expect(await server.stop() == 0)
    }

    /// `curl` over TLS trusting the test CA: the status code, or nil when the request failed.
    private func curl(_ certificates: TestCertificates, port: Int, path: String, tls: [String] = []) async throws -> String {
        try await TestCertificates.run(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", certificates.caFile] + tls + ["https://127.0.0.1:\(port)\(path)"],
            check: false
        ).output
    }

    /// What `openssl s_client` sees of a new connection: the protocol and the certificate's subject.
    private func handshake(_ certificates: TestCertificates, port: Int, version: String) async throws -> (status: Int32, output: String) {
        try await TestCertificates.run(
            "/usr/bin/openssl",
            ["s_client", "-connect", "127.0.0.1:\(port)", version, "-CAfile", certificates.caFile, "-verify_return_error", "-brief"],
            input: "", check: false)
    }

    /// A kept-alive TLS connection (`openssl s_client`) that sends requests one at a time.
    private final class TLSSession: Sendable {
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()

        init(_ certificates: TestCertificates, port: Int) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = [
                "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", certificates.caFile, "-verify_return_error", "-quiet", "-tls1_3"
            ]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// Sends `GET path` on the connection and reads its whole answer (status line first).
        func get(_ path: String) async -> String {
            input.fileHandleForWriting.write(Data("GET \(path) HTTP/1.1\r\nHost: gateway\r\n\r\n".utf8))
            let reader = output.fileHandleForReading
            return await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    var text = ""
                    while !Self.isComplete(text) {
                        let data = reader.availableData
                        if data.isEmpty { break }
                        text += String(decoding: data, as: UTF8.self)
                    }
                    continuation.resume(returning: text)
                }
            }
        }

        private static func isComplete(_ text: String) -> Bool {
            guard let end = text.range(of: "\r\n\r\n") else { return false }
            let length =
                text[..<end.lowerBound].lowercased().split(separator: "\r\n")
                .first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            return text[end.upperBound...].utf8.count >= length
        }

        /// Ends `openssl` (Foundation reaps it; waiting for it here would spin a run loop for a minute).
        func close() {
            try? input.fileHandleForWriting.close()
            process.terminate()
        }
    }

    @Test(
        "curl and openssl over TLS 1.2 and 1.3; plain HTTP is refused; /readyz reports the certificate; a rotated certificate serves new connections while an open one goes on"
    )
    func servesAndRotates() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let first = try await certificates.issue("first", commonName: "first.test")
        let files = try GatewayFiles("tls")
        defer { files.remove() }
        let certificate = files.directory.appendingPathComponent("server.pem").path
        let key = files.directory.appendingPathComponent("server.key").path
        try FileManager.default.copyItem(atPath: first.certificate, toPath: certificate)
        try FileManager.default.copyItem(atPath: first.key, toPath: key)
        try config(files, certificate: certificate, key: key)
        let checked = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
        #expect(checked.status == 0, "\(checked.standardError)")
        #expect(checked.standardOutput.contains("certificate_chain_file: \(certificate)"), "\(checked.standardOutput)")
        // The printout is itself a configuration that loads.
        try files.writeConfig(checked.standardOutput)
        #expect(try await AuthGateBinary.run(["check-config", "--config", files.config.path]).status == 0)

        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], plainHTTP: false)
        do {
            #expect(try await curl(certificates, port: server.port, path: "/auth/v1/health", tls: ["--tlsv1.2", "--tls-max", "1.2"]) == "200")
            #expect(try await curl(certificates, port: server.port, path: "/auth/v1/health", tls: ["--tlsv1.3"]) == "200")
            for version in ["-tls1_2", "-tls1_3"] {
                let (status, output) = try await handshake(certificates, port: server.port, version: version)
                #expect(status == 0, "\(version): \(output)")
                #expect(output.contains("Protocol version: TLSv1.\(version.last ?? "?")"), "\(output)")
                #expect(output.contains("CN = first.test") || output.contains("CN=first.test"), "\(output)")
            }
            let plain = try await TestCertificates.run(
                "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/auth/v1/health"], check: false)
            #expect(plain.output != "200", "plain HTTP on the TLS port must not be answered")
            let ready = try await TestCertificates.run(
                "/usr/bin/curl", ["-s", "--cacert", certificates.caFile, "https://127.0.0.1:\(server.port)/readyz"], check: false)
            #expect(ready.output.contains("server_tls") && ready.output.contains("certificate valid"), "\(ready.output)")

            // A connection opened before the rotation goes on through it.
            let kept = try TLSSession(certificates, port: server.port)
            defer { kept.close() }
            let before = await kept.get("/auth/v1/health")
            #expect(before.hasPrefix("HTTP/1.1 200"), "\(before)")

            // Rotate: new files in place (key first, then the certificate), then SIGHUP.
            let second = try await certificates.issue("second", commonName: "second.test")
            try Data(contentsOf: URL(fileURLWithPath: second.key)).write(to: URL(fileURLWithPath: key), options: .atomic)
            try Data(contentsOf: URL(fileURLWithPath: second.certificate)).write(to: URL(fileURLWithPath: certificate), options: .atomic)
            kill(server.processIdentifier, SIGHUP)
            try await waitUntil("new connections get the rotated certificate") {
                let output = try await handshake(certificates, port: server.port, version: "-tls1_3").output
                return output.contains("second.test")
            }
            #expect(try await curl(certificates, port: server.port, path: "/auth/v1/health") == "200")
            let after = await kept.get("/auth/v1/health")
            #expect(after.hasPrefix("HTTP/1.1 200"), "the connection opened before the rotation is still served: \(after)")
        } catch {
            _ = await server.stop()
            throw error
        }
        #expect(await server.stop() == 0)
    }

    @Test(
        "over server.max_connections on TLS, the refusal speaks what ALPN chose: h2 gets SETTINGS and GOAWAY with REFUSED_STREAM, HTTP/1.1 the 503"
    )
    func refusalFollowsALPN() async throws {
        try await withTLSGateway("full", server: ", max_connections: 1, keep_alive_timeout: 2s") { server, certificates in
            // One kept-alive connection takes the only place (once the start-up check's own
            // connection has been closed by keep_alive_timeout).
            var held: TLSSession?
            try await waitUntil("a connection holds the only place") {
                let session = try TLSSession(certificates, port: server.port)
                if await session.get("/auth/v1/health").hasPrefix("HTTP/1.1 200") {
                    held = session
                    return true
                }
                session.close()
                return false
            }
            defer { held?.close() }
            let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\0\0\0\u{4}\0\0\0\0\0"
            let http2 = try await TestCertificates.run(
                "/usr/bin/openssl",
                ["s_client", "-connect", "127.0.0.1:\(server.port)", "-alpn", "h2", "-quiet", "-ign_eof", "-CAfile", certificates.caFile],
                input: preface, check: false)
            // GOAWAY: length 28, type 7, stream 0; last stream 0, REFUSED_STREAM (7), the code.
            let goAway = "\0\0\u{1C}\u{7}\0\0\0\0\0" + "\0\0\0\0\0\0\0\u{7}too_many_connections"
            #expect(http2.output.contains(goAway), "\(http2.output.debugDescription)")
            #expect(try await curl(certificates, port: server.port, path: "/auth/v1/health", tls: ["--http1.1"]) == "503")
        }
    }

    @Test("minimum_version 1.3 refuses a TLS 1.2 client")
    func minimumVersion() async throws {
        try await withTLSGateway("strict", tls: ", minimum_version: \"1.3\"") { server, certificates in
            let (old, current) = (
                try await handshake(certificates, port: server.port, version: "-tls1_2"),
                try await handshake(certificates, port: server.port, version: "-tls1_3")
            )
            #expect(old.status != 0 && current.status == 0, "\(old.output)\n\(current.output)")
        }
    }

    @Test("a key that does not match its certificate, or an expired certificate, is refused at start naming the file")
    func refusedAtStart() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let one = try await certificates.issue("one", commonName: "one.test")
        let other = try await certificates.issue("other", commonName: "other.test")
        let files = try GatewayFiles("tls-bad")
        defer { files.remove() }
        try config(files, certificate: one.certificate, key: other.key)
        let checked = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
        #expect(checked.status == 1)
        #expect(checked.standardError.contains("does not match") && checked.standardError.contains(other.key), "\(checked.standardError)")
        await #expect(throws: TestSupportError.self) {
            _ = try await AuthGateServer.start(arguments: ["--config", files.config.path], plainHTTP: false)
        }

        // Two days on, the certificate has expired: refused, naming the file.
        let tls = ServerTLSConfiguration(certificateChainFile: one.certificate, privateKeyFile: one.key, clientCAFile: nil, minimumVersion: .tls12)
        _ = try ServerTLSContext.load(tls, applicationProtocols: ["http/1.1"], now: Date())
        #expect {
            _ = try ServerTLSContext.load(tls, applicationProtocols: ["http/1.1"], now: Date().addingTimeInterval(3 * 86_400))
        } throws: { error in
            "\(error)".contains("expired") && "\(error)".contains(one.certificate)
        }
    }
}
