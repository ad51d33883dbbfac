import AuthGateTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `authgate serve` through the real executable.
@Suite("authgate serve", .timeLimit(.minutes(3)))
struct ServeCommandTests {
    @Test("development defaults: serves /health, warns loudly, logs JSON with request ids, stops cleanly on SIGTERM")
    func developmentMode() async throws {
        let server = try await AuthGateServer.start()
        let (data, response) = try await HTTP.get(server.baseURL.appendingPathComponent("auth/v1/health"), headers: ["X-Request-Id": "probe-1"])
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self).contains("\"name\":\"GoTrue\""))
        // A HEAD request is served through Hummingbird's own channel, which names requests itself.
        let (_, head) = try await HTTP.send(
            server.baseURL.appendingPathComponent("auth/v1/health"), method: "HEAD", headers: ["X-Request-Id": "probe-2"])
        #expect(head.statusCode == 200)
        let (_, ready) = try await HTTP.get(server.baseURL.appendingPathComponent("readyz"))
        #expect(ready.statusCode == 200)
        let status = await server.stop(signal: SIGTERM)
        #expect(status == 0)
        let log = server.log
        #expect(log.contains("DEVELOPMENT MODE"))
        for (id, method) in [("probe-1", "GET"), ("probe-2", "HEAD")] {
            let requestLine = log.split(separator: "\n").first { $0.contains("\"gw.request_id\":\"\(id)\"") }
            let line = try #require(requestLine, "no access line for \(method)")
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            #expect(object?["gw.method"] == method)
            #expect(object?["gw.path"] == "/auth/v1/health")
            #expect(object?["gw.status"] == "200")
            // One request id per line: Hummingbird's own is replaced by the gateway's.
            #expect(object?["hb.request.id"] == nil, "\(line)")
        }
        #expect(log.contains("\"msg\":\"authgate stopped\""))
        #expect(server.drainEnding == "drained")
        // The executable's link order puts jemalloc's malloc ahead of libc's (MemoryAllocator).
        #expect(log.contains("\"gw.allocator\":\"jemalloc 5."))
        #expect(!log.contains("does not serve malloc"))
    }

    @Test("SIGTERM drains: a proxied response in flight when the signal lands completes in full, then serve exits 0")
    func drainsInFlightRequests() async throws {
        let upstream = try await StreamingUpstream.start()
        let files = try GatewayFiles("serve-drain")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, shutdown_timeout: 20s }
            routes:
              - { name: files, path_prefix: /files/, upstreams: [\(upstream.url)], auth: public, strip_prefix: true }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        // The upstream sends each event only when released: the response is in flight, its head
        // relayed and its body unfinished, when SIGTERM arrives.
        let connection = try RawConnection(port: server.port)
        await connection.send("GET /files/events/2 HTTP/1.1\r\nHost: gw\r\n\r\n")
        upstream.releaseEvent()
        var received = ""
        while !received.contains("data: event 1\n\n") {
            let bytes = await connection.receive()
            #expect(!bytes.isEmpty, "the connection closed before the first event")
            if bytes.isEmpty { break }
            received += String(decoding: bytes, as: UTF8.self)
        }
        #expect(received.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let exit = Task { await server.stop(signal: SIGTERM) }
        // The signal has landed once the listener is closed: new connections are refused.
        try await waitUntil("serve stops accepting connections after SIGTERM") { (try? RawConnection(port: server.port)) == nil }
        #expect(server.isRunning, "serve waits for the response in flight")
        upstream.releaseEvent()
        let (rest, closed) = await connection.receiveUntilClosed()
        received += String(decoding: rest, as: UTF8.self)
        #expect(received.contains("data: event 2\n\n"), "the in-flight response completed: \(received.suffix(200))")
        #expect(received.hasSuffix("0\r\n\r\n"), "the chunked body ended properly, not cut")
        #expect(closed)
        #expect(await exit.value == 0)
        await upstream.stop()
    }

    /// An open WebSocket tunnel used to hold the drain until `shutdown_timeout` and then be cut
    /// without a close frame; clients now hear 1001 (going away) at once and reconnect elsewhere.
    @Test("SIGTERM ends open WebSocket tunnels at once with 1001 to both sides, then serve exits 0 long before shutdown_timeout")
    func endsWebSocketsOnShutdown() async throws {
        let upstream = try await EchoUpstream.start()
        let files = try GatewayFiles("serve-websocket")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, shutdown_timeout: 30s }
            routes:
              - { name: ws, path_prefix: /ws/, upstreams: [\(upstream.url)], auth: public }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        let connection = try RawConnection(port: server.port)
        await connection.send(
            "GET /ws/chat HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        let greeting: [UInt8] = [0x81, 9] + Array("user=none".utf8)
        var received: [UInt8] = []
        while !(received.count >= greeting.count && received.suffix(greeting.count).elementsEqual(greeting)) {
            let more = await connection.receive()
            try #require(!more.isEmpty, "no tunnel: \(String(decoding: received, as: UTF8.self))")
            received += more
        }
        let exit = Task { await server.stop(signal: SIGTERM) }
        let (rest, closed) = await connection.receiveUntilClosed()
        #expect(rest == [0x88, 2, 0x03, 0xE9], "a close frame with 1001 (going away): \(rest)")
        #expect(closed)
        #expect(await exit.value == 0)
        // A tunnel that held the drain would have been cut when the 30 s ran out.
        #expect(server.drainEnding == "drained", "the drain did not finish of itself: \(server.log.suffix(2000))")
        try await waitUntil("the upstream's WebSocket ended", deadline: .seconds(10)) { upstream.webSocketsEnded == 1 }
        await upstream.stop()
    }

    @Test(
        "SIGTERM closes connections that have not sent a request yet at once (plain with h2c detection, and TLS before ALPN), not after request_head_timeout",
        arguments: [false, true])
    func closesSilentConnections(tls: Bool) async throws {
        let certificates = try await TestCertificates()
        defer { certificates.remove() }
        let issued = try await certificates.issue("silent", commonName: "silent.test")
        let files = try GatewayFiles("serve-silent")
        defer { files.remove() }
        let listenerTLS = tls ? ", tls: { certificate_chain_file: \"\(issued.certificate)\", private_key_file: \"\(issued.key)\" }" : ""
        try files.writeConfig(
            """
            server: { host: 127.0.0.1, request_head_timeout: 60s, shutdown_timeout: 30s\(listenerTLS) }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers: { anonymous: { enabled: true } }
            """)
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], plainHTTP: !tls)
        // Connected, and silent: no byte (plain), or no handshake (TLS). Accepted before the signal
        // (a connection still in the listen backlog is reset with the listener): a request on a
        // connection opened after it is answered, and the listener accepts in order.
        let silent = try RawConnection(port: server.port)
        if tls {
            let answered = try await TestCertificates.run(
                "/usr/bin/curl",
                ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", certificates.caFile, "https://127.0.0.1:\(server.port)/health"])
            #expect(answered.output == "200")
        } else {
            #expect(try await HTTP.get(server.baseURL.appendingPathComponent("health")).1.statusCode == 200)
        }
        let status = await server.stop(signal: SIGTERM)
        #expect(status == 0)
        // A silent connection kept until request_head_timeout (60 s) would have held the drain
        // until shutdown_timeout (30 s) cut it.
        #expect(server.drainEnding == "drained", "the drain waited for a connection that never sent a request: \(server.log.suffix(2000))")
        #expect(await silent.receiveUntilClosed().closed, "the silent connection is closed")
    }

    @Test(
        "a stalled reader of standard error stops nothing: every request is answered, lines past logging.buffer are dropped, counted and reported once the reader is back",
        arguments: ["json", "text"])
    func stalledLogReader(format: String) async throws {
        let files = try GatewayFiles("serve-stalled-log")
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1 }
            logging: { level: info, format: \(format), buffer: 64KiB }
            """)
        let capture = try OutputCapture()
        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path], standardError: capture.writeHandle)
        capture.closeWriteEnd()
        // Nothing reads standard error: its socket buffers take a few hundred access lines, the
        // log writer's 64 KiB as many again. When every line was written by the event loop that
        // logged it, the loop blocked there and request 270 or so timed out (10 s), /health too.
        let requests = 2000
        for index in 0..<requests {
            let (_, response) = try await HTTP.get(server.baseURL.appendingPathComponent("health"), headers: ["X-Request-Id": "stalled-\(index)"])
            #expect(response.statusCode == 200)
        }
        let output = Task { await capture.readToEnd() }
        // The reader is back: the writer writes what it kept, then reports what it dropped.
        var dropped = 0
        try await waitUntil("the dropped lines are counted at /metrics") {
            let (data, _) = try await HTTP.get(server.baseURL.appendingPathComponent("metrics"))
            let family = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("authgate_log_lines_dropped_total ") }
            dropped = family.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            return dropped > 0
        }
        #expect(await server.stop(signal: SIGTERM) == 0)
        var records: [LogRecord] = []
        // The development banner's lines aside, every line is one whole log line.
        for line in String(decoding: await output.value, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("*") {
            let record = LogRecord(line, format: format)
            #expect(record != nil, "not one whole line: \(line.prefix(200))")
            if let record { records.append(record) }
        }
        let logged = records.compactMap { $0.requestID }.filter { $0.hasPrefix("stalled-") }.compactMap { Int($0.dropFirst("stalled-".count)) }
        #expect(logged == logged.sorted() && logged.first == 0, "access lines kept in order from the first")
        #expect(logged.count < requests, "the lines past the buffer were dropped")
        let reported = records.filter { $0.message == "log lines dropped: standard error was not read fast enough" }.compactMap(\.droppedLines)
        #expect(reported.reduce(0, +) == dropped, "every dropped line is in a warning and in the metric")
        #expect(logged.count + dropped >= requests, "each request was logged or counted: \(logged.count) logged, \(dropped) dropped")
        #expect(records.last?.message == "authgate stopped", "lines logged while stopping are written before exit")
    }

    /// What ``stalledLogReader(format:)`` reads from one log line, in either format.
    private struct LogRecord {
        let requestID: String?
        let message: String
        let droppedLines: Int?

        /// Nil unless `line` is one whole line of `format`.
        init?(_ line: Substring, format: String) {
            if format == "json" {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], let message = object["msg"] else {
                    return nil
                }
                (requestID, self.message, droppedLines) = (object["gw.request_id"], message, object["gw.dropped_lines"].flatMap { Int($0) })
                return
            }
            // swift-log's text: `<time> <level> <label>: <name>=<value> … [<module>] <message>`.
            guard line.first?.isNumber == true, let source = line.range(of: "] ", options: .backwards) else { return nil }
            let fields = line[..<source.lowerBound].split(separator: " ")
            func value(_ name: String) -> String? { fields.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) } }
            (requestID, message, droppedLines) = (
                value("gw.request_id"), String(line[source.upperBound...]), value("gw.dropped_lines").flatMap { Int($0) }
            )
        }
    }

    @Test("with Redis: ready while Redis answers")
    func redisStore() async throws {
        let redisURL = try await SharedRedis.url()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A P-256 private key in PEM form, made by the test itself.
        let key = directory.appendingPathComponent("k1.pem")
        try TestKeys.es256PEM().write(to: key, atomically: true, encoding: .utf8)
        let config = directory.appendingPathComponent("authgate.yaml")
        try """
        store: { kind: redis, redis: { url: "\(redisURL)" } }
        tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
        """.write(to: config, atomically: true, encoding: .utf8)
        let server = try await AuthGateServer.start(arguments: ["--config", config.path])
        let (data, ready) = try await HTTP.get(server.baseURL.appendingPathComponent("readyz"))
        #expect(ready.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
        #expect(String(decoding: data, as: UTF8.self).contains("active kid k1"))
        #expect(await server.stop() == 0)
        #expect(!server.log.contains("DEVELOPMENT MODE"))
    }

    @Test("an invalid configuration stops serve with exit 2 and the problem named")
    func invalidConfiguration() async throws {
        let result = try await AuthGateBinary.run(["serve"], environment: ["AUTHGATE_STORE_KIND": "cassandra"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("store.kind: \"cassandra\" is not one of memory, redis"))
    }
}
