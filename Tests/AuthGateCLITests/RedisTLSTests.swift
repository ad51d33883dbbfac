import AuthGateCore
import AuthGateTestSupport
import Foundation
import Logging
import NIOCore
import NIOPosix
import RedisBridge
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `rediss://`: `redis-server` started with TLS only, certificates from a local CA made at test
/// time. The client verifies the chain and the name and refuses anything else; mutual TLS; the
/// gateway and the admin CLI work over it; the settings are checked at start.
@Suite("TLS to Redis", .serialized, .timeLimit(.minutes(3)))
struct RedisTLSTests {
    private let logger = Logger(label: "redis-tls-test")

    /// One connection attempt (no pool, no backoff): the reply to PING, or the error's message.
    private func ping(_ url: RedisURL, _ tls: TLSClientConfiguration) async -> Result<String, RedisError> {
        let configuration = RedisClientConfiguration(url: url, connectTimeout: .seconds(2), tls: tls)
        do {
            let connection = try await RedisConnection.connect(
                to: url, configuration: configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: logger)
            defer { connection.closeNow() }
            let reply = try await connection.send(RedisCommand("PING"))
            return .success(reply.string ?? "\(reply)")
        } catch let error as RedisError {
            return .failure(error)
        } catch {
            return .failure(RedisError(.connectionFailed, "\(error)"))
        }
    }

    private func failure(_ result: Result<String, RedisError>) -> RedisError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    @Test("a verified TLS connection works; a chain from another CA, another name, plain TCP to the TLS port and TLS to a plain port are refused")
    func verifies() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let other = try await TestCertificates()
        defer { other.remove() }
        // Named redis.test only: connecting to 127.0.0.1 needs server_name (a certificate that
        // names IP addresses is matched against the address connected to; the mutual TLS test).
        let issued = try await certificates.issue("redis", commonName: "redis.test", dnsNames: ["redis.test"], ipAddress: false)
        let server = try await RedisServerProcess.startTLS(certificate: issued.certificate, key: issued.key, clientCAFile: nil)
        defer { Task { await server.stop() } }
        let url = server.url
        #expect(url.tls && url.description.hasPrefix("rediss://"))

        #expect(try await ping(url, TLSClientConfiguration(caFile: certificates.caFile, serverName: "redis.test")).get() == "PONG")
        let byAddress = try #require(failure(await ping(url, TLSClientConfiguration(caFile: certificates.caFile))))
        #expect(byAddress.message.contains("127.0.0.1"), "\(byAddress.message)")

        let systemRoots = try #require(failure(await ping(url, TLSClientConfiguration(serverName: "redis.test"))))
        #expect(systemRoots.code == .connectionFailed)
        #expect(systemRoots.message.contains("did not verify against the system's trusted roots"), "\(systemRoots.message)")

        let otherCA = try #require(failure(await ping(url, TLSClientConfiguration(caFile: other.caFile, serverName: "redis.test"))))
        #expect(otherCA.message.contains("did not verify against the CA file \"\(other.caFile)\""), "\(otherCA.message)")

        let otherName = try #require(failure(await ping(url, TLSClientConfiguration(caFile: certificates.caFile, serverName: "cache.example.com"))))
        #expect(otherName.code == .connectionFailed)
        #expect(otherName.message.contains("cache.example.com"), "\(otherName.message)")

        var plain = url
        plain.tls = false
        #expect(failure(await ping(plain, TLSClientConfiguration())) != nil, "plain RESP to the TLS port answered")

        let plainServer = try await RedisServerProcess.start()
        defer { Task { await plainServer.stop() } }
        var tlsToPlain = plainServer.url
        tlsToPlain.tls = true
        let notTLS = try #require(failure(await ping(tlsToPlain, TLSClientConfiguration(caFile: certificates.caFile))))
        #expect(notTLS.message.contains("TLS"), "\(notTLS.message)")
        for error in [byAddress, systemRoots, otherCA, otherName, notTLS] {
            #expect(!error.message.contains("BoringSSL") && !error.message.contains("OPENSSL_internal"), "library detail: \(error.message)")
        }
    }

    @Test("mutual TLS: without a client certificate the server refuses, with one from its CA it answers")
    func mutualTLS() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let issued = try await certificates.issue("redis", commonName: "redis.test")
        let client = try await certificates.issue("client", commonName: "authgate", usage: .client)
        let server = try await RedisServerProcess.startTLS(certificate: issued.certificate, key: issued.key, clientCAFile: certificates.caFile)
        defer { Task { await server.stop() } }

        let refused = try #require(failure(await ping(server.url, TLSClientConfiguration(caFile: certificates.caFile))))
        #expect(refused.message.contains("client certificate"), "\(refused.message)")

        let withCertificate = TLSClientConfiguration(
            caFile: certificates.caFile, certificateChainFile: client.certificate, privateKeyFile: client.key)
        #expect(try await ping(server.url, withCertificate).get() == "PONG")

        let halfSet = TLSClientConfiguration(caFile: certificates.caFile, certificateChainFile: client.certificate)
        let incomplete = try #require(failure(await ping(server.url, halfSet)))
        #expect(incomplete.code == .invalidConfiguration && incomplete.message.contains("both"), "\(incomplete.message)")
    }

    @Test("Sentinel over TLS: the client asks a TLS Sentinel for the master and reaches it over TLS")
    func sentinel() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let issued = try await certificates.issue("redis", commonName: "redis.test")
        let master = try await RedisServerProcess.startTLS(certificate: issued.certificate, key: issued.key, clientCAFile: nil)
        defer { Task { await master.stop() } }
        let sentinel = try await RedisServerProcess.startSentinel(
            masterName: "tlsmaster", masterPort: master.port, quorum: 1, tls: (issued.certificate, issued.key, certificates.caFile))
        defer { Task { await sentinel.stop() } }
        var url = master.url
        url.port = 1  // not used: the Sentinel names the master
        let client = RedisClient(
            configuration: RedisClientConfiguration(
                url: url, connectTimeout: .seconds(2),
                sentinel: RedisSentinelConfiguration(masterName: "tlsmaster", nodes: [.init(host: "127.0.0.1", port: sentinel.port)]),
                tls: TLSClientConfiguration(caFile: certificates.caFile)),
            logger: logger)
        defer { Task { await client.shutdown() } }
        try await client.send(RedisCommand("SET", "sentinel-tls", "yes"))
        #expect(try await client.send(RedisCommand("GET", "sentinel-tls")).string == "yes")
        #expect(try await client.send(RedisCommand("CONFIG", "GET", "tls-port")).array?.last?.string == String(master.port))
    }

    @Test("the gateway and the admin CLI over rediss:// with mutual TLS; a CLI that does not trust the server's CA is refused")
    func gatewayAndCLI() async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let other = try await TestCertificates()
        defer { other.remove() }
        let issued = try await certificates.issue("redis", commonName: "redis.test")
        let client = try await certificates.issue("client", commonName: "authgate", usage: .client)
        let server = try await RedisServerProcess.startTLS(certificate: issued.certificate, key: issued.key, clientCAFile: certificates.caFile)
        defer { Task { await server.stop() } }
        let files = try GatewayFiles("redis-tls")
        defer { files.remove() }
        func write(caFile: String) throws {
            try files.writeConfig(
                """
                server: { host: 127.0.0.1 }
                store:
                  kind: redis
                  redis:
                    url: "\(server.url)"
                    tls: { ca_file: "\(caFile)", certificate_chain_file: "\(client.certificate)", private_key_file: "\(client.key)" }
                tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
                providers: { anonymous: { enabled: true } }
                rate_limits: { token: off, signup: off, nonce: off }
                logging: { level: warning }
                """)
        }
        try write(caFile: certificates.caFile)
        let checked = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
        #expect(checked.status == 0, "\(checked.standardError)")
        #expect(checked.standardOutput.contains("url: rediss://127.0.0.1:\(server.port)/0"), "\(checked.standardOutput)")
        #expect(checked.standardOutput.contains("ca_file: \(certificates.caFile)"), "\(checked.standardOutput)")

        let gateway = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        do {
            let (data, response) = try await HTTP.send(HTTP.loopbackURL(port: gateway.port, path: "/auth/v1/signup"), method: "POST", json: "{}")
            #expect(response.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            let userID = try #require(try JSONValue.parse(Array(data)).objectValue?["user"]?.objectValue?["id"]?.stringValue)
            let (_, ready) = try await HTTP.get(HTTP.loopbackURL(port: gateway.port, path: "/readyz"))
            #expect(ready.statusCode == 200)

            let listed = try await AuthGateBinary.run(["users", "show", userID, "--config", files.config.path])
            #expect(listed.status == 0, "\(listed.standardError)")
            #expect(listed.standardOutput.contains(userID), "\(listed.standardOutput)")

            try write(caFile: other.caFile)
            let refused = try await AuthGateBinary.run(["users", "show", userID, "--config", files.config.path])
            #expect(refused.status != 0)
            #expect(refused.standardError.contains("did not verify against the CA file"), "\(refused.standardError)")
        } catch {
            _ = await gateway.stop()
            throw error
        }
        _ = await gateway.stop()
    }

    @Test("check-config: TLS settings with a redis:// URL, a CA file that is not PEM and a client key without its certificate, each named")
    func settingsChecked() async throws {
        let files = try GatewayFiles("redis-tls-config")
        defer { files.remove() }
        let notPEM = files.directory.appendingPathComponent("ca.txt").path
        try "not a certificate\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let cases: [(tls: String, url: String, expected: String)] = [
            ("{ ca_file: \"\(notPEM)\" }", "redis://127.0.0.1:6379/0", "store.redis.tls: TLS settings need a rediss:// URL"),
            ("{ ca_file: \"\(notPEM)\" }", "rediss://127.0.0.1:6379/0", "store.redis.tls.ca_file: the CA file \"\(notPEM)\" cannot be read"),
            ("{ private_key_file: \"k1.pem\" }", "rediss://127.0.0.1:6379/0", "needs both its certificate chain file and its private key file"),
            ("{ server_name: \"10.0.0.1\" }", "rediss://127.0.0.1:6379/0", "store.redis.tls.server_name")
        ]
        for (tls, url, expected) in cases {
            try files.writeConfig(
                """
                store: { kind: redis, redis: { url: "\(url)", tls: \(tls) } }
                tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
                """)
            let result = try await AuthGateBinary.run(["check-config", "--config", files.config.path])
            #expect(result.status != 0, "\(tls) was accepted")
            #expect((result.standardOutput + result.standardError).contains(expected), "\(tls): \(result.standardError)")
        }
    }
}
