import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `https://` upstreams on the real binary: nginx serving TLS with a certificate from a CA made
/// at test time. Verified against a route's CA file and name, refused (502 and one clear log
/// line) without them, never retried in the clear; mutual TLS with a client certificate.
@Suite("TLS to upstreams", .serialized, .timeLimit(.minutes(3)))
struct UpstreamTLSTests {
    @Test("a route's CA file and server name verify an https upstream; the system roots, another name or another CA get 502 and a log line")
    func verifies() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let other = try await TestCertificates()
        defer { other.remove() }
        // Named upstream.test only, so the name (not the address) is what is checked.
        let issued = try await certificates.issue("upstream", commonName: "upstream.test", dnsNames: ["upstream.test"], ipAddress: false)
        let client = try await certificates.issue("client", commonName: "authgate", usage: .client)
        let upstream = try await NginxServer.start(
            locations: #"location / { return 200 "tls upstream\n"; }"#, tls: (issued.certificate, issued.key, nil))
        defer { upstream.stop() }
        let mutual = try await NginxServer.start(
            locations: #"location / { return 200 "client $ssl_client_s_dn\n"; }"#, tls: (issued.certificate, issued.key, certificates.caFile))
        defer { mutual.stop() }
        let files = try GatewayFiles("upstream-tls")
        defer { files.remove() }
        func route(_ name: String, _ upstream: NginxServer, _ tls: String?) -> String {
            "  - { name: \(name), path_prefix: /\(name)/, upstreams: [\"\(upstream.url)\"], auth: public, strip_prefix: true"
                + (tls.map { ", tls: \($0)" } ?? "") + " }"
        }
        let ca = "ca_file: \"\(certificates.caFile)\""
        try files.writeConfig(
            """
            server: { host: 127.0.0.1 }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            logging: { level: warning }
            routes:
            \(route("trusted", upstream, "{ \(ca), server_name: upstream.test }"))
            \(route("systemroots", upstream, "{ server_name: upstream.test }"))
            \(route("othername", upstream, "{ \(ca), server_name: other.example }"))
            \(route("otherca", upstream, "{ ca_file: \"\(other.caFile)\", server_name: upstream.test }"))
            \(route("byaddress", upstream, "{ \(ca) }"))
            \(route("mutual", mutual, "{ \(ca), server_name: upstream.test, certificate_chain_file: \"\(client.certificate)\", private_key_file: \"\(client.key)\" }"))
            \(route("nocertificate", mutual, "{ \(ca), server_name: upstream.test }"))
            """)
        let checked = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
        #expect(checked.status == 0, "\(checked.standardError)")
        #expect(checked.standardOutput.contains("server_name: other.example"), "\(checked.standardOutput)")

        let gateway = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        defer { Task { _ = await gateway.stop() } }
        func get(_ path: String) async throws -> (status: Int, body: String) {
            let (data, response) = try await HTTP.get(HTTP.loopbackURL(port: gateway.port, path: path))
            return (response.statusCode, String(decoding: data, as: UTF8.self))
        }
        #expect(try await get("/trusted/x") == (200, "tls upstream\n"))
        // A kept-alive TLS connection serves the next request too.
        #expect(try await get("/trusted/y") == (200, "tls upstream\n"))
        let answered = try await get("/mutual/x")
        #expect(answered.status == 200 && answered.body.contains("CN=authgate"), "\(answered)")
        #expect(try await get("/nocertificate/x").status == 400, "nginx asks for a client certificate and answers 400 without one")

        for (path, reason) in [
            ("/systemroots/x", "did not verify against the system's trusted roots"),
            ("/othername/x", "is not for other.example"),
            ("/otherca/x", "did not verify against the CA file"),
            ("/byaddress/x", "is not for 127.0.0.1")
        ] {
            let refused = try await get(path)
            #expect(refused.status == 502, "\(path): \(refused)")
            try await waitUntil("the log names why \(path) was refused", deadline: .seconds(5)) {
                gateway.log.split(separator: "\n").contains {
                    $0.contains("upstream TLS handshake failed") && $0.contains(reason) && (path != "/otherca/x" || $0.contains(other.caFile))
                }
            }
        }
        #expect(!gateway.log.contains("BoringSSL") && !gateway.log.contains("OPENSSL_internal"), "library detail in the log")
    }

    @Test("check-config: tls on a route without an https upstream, a client key without its certificate")
    func settingsChecked() async throws {
        let files = try GatewayFiles("upstream-tls-config")
        defer { files.remove() }
        for (route, expected) in [
            (
                "{ name: a, path_prefix: /a/, upstreams: [\"http://127.0.0.1:9\"], tls: { server_name: a.example } }",
                "routes[0].tls: TLS settings apply to https:// upstreams"
            ),
            (
                "{ name: a, path_prefix: /a/, upstreams: [\"https://127.0.0.1:9\"], tls: { private_key_file: k1.pem } }",
                "needs both its certificate chain file and its private key file"
            )
        ] {
            try files.writeConfig(
                """
                tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
                routes: [ \(route) ]
                """)
            let result = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
            #expect(result.status != 0, "\(route) was accepted")
            #expect((result.standardOutput + result.standardError).contains(expected), "\(route): \(result.standardError)")
        }
    }
}
