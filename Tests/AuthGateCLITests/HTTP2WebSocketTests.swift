import AuthGateCore
import AuthGateTestSupport
import Foundation
import NIOCore
import NIOHPACK
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// WebSockets over HTTP/2 (RFC 8441) on the real binary, with frames written byte by byte: the
/// setting announced, a tunnel to an upstream beside ordinary streams on one connection, every
/// refusal a status and never a tunnel, a revoked session's tunnel closed with 1008, and graceful
/// shutdown's 1001.
@Suite("WebSocket over HTTP/2", .serialized, .timeLimit(.minutes(3)))
struct HTTP2WebSocketTests {
    /// One HTTP/2 connection to the gateway with the SETTINGS exchanged, read frame by frame; the
    /// header blocks it receives are decoded in order with one HPACK decoder, as a client does.
    private final class Client {
        let raw: RawConnection
        private var received: [UInt8] = []
        private var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        private var decoded: [Int: HPACKHeaders] = [:]
        /// The server's first SETTINGS.
        private(set) var serverSettings: [(UInt16, UInt32)] = []

        init(port: Int) async throws {
            raw = try RawConnection(port: port, receiveBuffer: 1 << 20)
            await raw.send(bytes: HTTP2Frames.preface + HTTP2Frames.settings)
            try await read { frames in frames.contains { $0.type == HTTP2Frames.FrameType.settings.rawValue && $0.flags & 0x1 == 0 } }
            let settings = try #require(frames.first { $0.type == HTTP2Frames.FrameType.settings.rawValue && $0.flags & 0x1 == 0 })
            serverSettings = HTTP2Frames.settings(in: settings.payload)
            await raw.send(bytes: HTTP2Frames.frame(.settings, flags: 0x1))
        }

        var frames: [HTTP2Frames.Frame] { HTTP2Frames.parse(received) }

        /// Reads until `done` holds for the frames so far; throws when the connection ends first.
        func read(until done: ([HTTP2Frames.Frame]) -> Bool) async throws {
            while !done(frames) {
                let chunk = await raw.receive()
                guard !chunk.isEmpty else {
                    throw TestSupportError("the connection ended or went silent; frames: \(frames.map { ($0.type, $0.stream) })")
                }
                received += chunk
            }
        }

        /// Opens a WebSocket on `stream` to `path` (extra fields as given) and returns the answer's header fields.
        func connect(stream: UInt32, path: String, protocol name: String = "websocket", fields: [(String, String)] = []) async throws -> HPACKHeaders
        {
            let block = HTTP2Frames.extendedConnectHeaderBlock(path: path, protocol: name, fields: [("sec-websocket-version", "13")] + fields)
            await raw.send(bytes: HTTP2Frames.frame(.headers, flags: 0x4, stream: stream, payload: block))
            return try await answer(stream: stream)
        }

        /// The header fields of `stream`'s answer, read when they have come.
        func answer(stream: UInt32) async throws -> HPACKHeaders {
            try await read { frames in frames.contains { $0.stream == stream && $0.type == HTTP2Frames.FrameType.headers.rawValue } }
            // Every header block so far, in order: HPACK's dynamic table is the connection's.
            for (index, frame) in frames.enumerated() where frame.type == HTTP2Frames.FrameType.headers.rawValue && decoded[index] == nil {
                var buffer = ByteBuffer(bytes: frame.payload)
                decoded[index] = try decoder.decodeHeaders(from: &buffer)
            }
            let index = try #require(frames.firstIndex { $0.stream == stream && $0.type == HTTP2Frames.FrameType.headers.rawValue })
            return try #require(decoded[index])
        }

        /// Sends one masked WebSocket frame on `stream`.
        func send(stream: UInt32, opcode: UInt8, _ payload: [UInt8], endStream: Bool = false) async {
            let frame = HTTP2Frames.maskedWebSocketFrame(opcode: opcode, payload: payload)
            await raw.send(bytes: HTTP2Frames.frame(.data, flags: endStream ? 0x1 : 0, stream: stream, payload: frame))
        }

        /// The bytes of `stream`'s DATA frames so far: the tunnel's WebSocket frames.
        func tunnelBytes(stream: UInt32) -> [UInt8] {
            frames.filter { $0.stream == stream && $0.type == HTTP2Frames.FrameType.data.rawValue }.flatMap(\.payload)
        }

        /// Reads until `stream`'s tunnel bytes end with `suffix`.
        func readTunnel(stream: UInt32, endingWith suffix: [UInt8]) async throws {
            try await read { _ in tunnelBytes(stream: stream).suffix(suffix.count).elementsEqual(suffix) }
        }

        /// Whether `stream` has ended from the server's side (END_STREAM or RST_STREAM).
        func ended(stream: UInt32) -> Bool {
            frames.contains {
                $0.stream == stream
                    && ($0.flags & 0x1 != 0 && $0.type != HTTP2Frames.FrameType.settings.rawValue
                        || $0.type == HTTP2Frames.FrameType.rstStream.rawValue)
            }
        }
    }

    /// The WebSocket frames in `bytes` as the gateway sends them (unmasked): opcode and payload,
    /// up to the first incomplete one.
    private static func webSocketFrames(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
        var frames: [(UInt8, [UInt8])] = []
        var offset = 0
        while bytes.count - offset >= 2 {
            var length = Int(bytes[offset + 1] & 0x7F)
            var start = offset + 2
            if length == 126 {
                guard bytes.count - offset >= 4 else { break }
                length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
                start = offset + 4
            }
            guard bytes.count - start >= length else { break }
            frames.append((bytes[offset] & 0x0F, Array(bytes[start..<start + length])))
            offset = start + length
        }
        return frames
    }

    /// The sum of `name`'s samples whose labels include every one of `labels` in the gateway's
    /// `/metrics` (nil when it has none).
    private static func metric(_ server: AuthGateServer, _ name: String, _ labels: [String] = []) async throws -> Double? {
        let (data, _) = try await HTTP.get(HTTP.loopbackURL(port: server.port, path: "/metrics"))
        let samples = String(decoding: data, as: UTF8.self).split(separator: "\n").filter { line in
            (line.hasPrefix(name + "{") || line.hasPrefix(name + " ")) && labels.allSatisfy { line.contains($0) }
        }
        guard !samples.isEmpty else { return nil }
        return samples.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }

    /// An unmasked text frame as the upstream sends it through the gateway.
    private static func text(_ text: String) -> [UInt8] { [0x81, UInt8(text.utf8.count)] + Array(text.utf8) }

    /// A gateway (`server` settings added) with anonymous sign-up and routes to `upstream`:
    /// `/ws/` public, `/ws/secure/` for signed-in callers, and the routes `extra` lists.
    private func withGateway(
        _ name: String, server settings: String = "", extra: String = "", logLevel: String = "warning",
        _ body: (AuthGateServer, EchoUpstream) async throws -> Void
    ) async throws {
        let upstream = try await EchoUpstream.start()
        let files = try GatewayFiles(name)
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1\(settings) }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers: { anonymous: { enabled: true } }
            rate_limits: { token: off, signup: off, nonce: off }
            routes:
              - { name: open, path_prefix: /ws/, upstreams: ["\(upstream.url)"], auth: public }
              - { name: secure, path_prefix: /ws/secure/, upstreams: ["\(upstream.url)"], auth: required, allow_anonymous: true }
            \(extra)
            logging: { level: \(logLevel) }
            """)
        let server: AuthGateServer
        do {
            server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        } catch {
            await upstream.stop()
            throw error
        }
        do {
            try await body(server, upstream)
        } catch {
            _ = await server.stop()
            await upstream.stop()
            throw error
        }
        _ = await server.stop()
        await upstream.stop()
    }

    @Test("the gateway announces extended CONNECT; a WebSocket on one stream echoes and closes cleanly while another stream is served beside it")
    func tunnel() async throws {
        try await withGateway("h2-ws-tunnel") { server, upstream in
            let client = try await Client(port: server.port)
            #expect(client.serverSettings.contains { $0 == (8, 1) }, "SETTINGS_ENABLE_CONNECT_PROTOCOL: \(client.serverSettings)")
            let answer = try await client.connect(stream: 1, path: "/ws/chat", fields: [("sec-websocket-protocol", "chat, other")])
            #expect(answer[":status"] == ["200"], "\(answer)")
            #expect(answer["sec-websocket-protocol"] == ["chat"], "the upstream's choice comes back")
            #expect(answer["sec-websocket-accept"].isEmpty && answer["upgrade"].isEmpty)
            try await client.readTunnel(stream: 1, endingWith: Self.text("user=none"))
            await client.send(stream: 1, opcode: 0x1, Array("hello over h2".utf8))
            try await client.readTunnel(stream: 1, endingWith: Self.text("hello over h2"))
            // An ordinary request on the same connection meanwhile.
            await client.raw.send(bytes: HTTP2Frames.get(stream: 3, path: "/auth/v1/health"))
            #expect(try await client.answer(stream: 3)[":status"] == ["200"])
            // The closing handshake: the upstream's close frame comes back and the stream ends.
            await client.send(stream: 1, opcode: 0x8, [0x03, 0xE8])
            try await client.read { _ in client.ended(stream: 1) }
            #expect(client.tunnelBytes(stream: 1).suffix(4).elementsEqual([0x88, 2, 0x03, 0xE8]), "\(client.tunnelBytes(stream: 1).suffix(8))")
            try await waitUntil("the upstream's WebSocket ended", deadline: .seconds(10)) { upstream.webSocketsEnded == 1 }
            #expect(!client.frames.contains { $0.type == HTTP2Frames.FrameType.goAway.rawValue }, "the connection goes on")
            // The metrics tell the two protocols apart, and count the tunnel as closed by its handshake.
            let (http1, head) = try await Self.http1Handshake(server)
            #expect(head.hasPrefix("HTTP/1.1 101"), "\(head)")
            try await waitUntil("both tunnels counted", deadline: .seconds(10)) {
                let overHTTP2 = try await Self.metric(server, "authgate_websocket_tunnels_opened_total", ["http_version=\"2\""])
                let overHTTP1 = try await Self.metric(server, "authgate_websocket_tunnels_opened_total", ["http_version=\"1.1\""])
                let open = try await Self.metric(server, "authgate_websocket_tunnels")
                let closed = try await Self.metric(server, "authgate_websocket_tunnels_closed_total", ["outcome=\"closed\""])
                // Each handshake counted with the status its client saw: 200 over HTTP/2, 101 over HTTP/1.1.
                let answered200 = try await Self.metric(server, "authgate_http_requests_total", ["route=\"open\"", "status_class=\"2xx\""])
                let answered101 = try await Self.metric(server, "authgate_http_requests_total", ["route=\"open\"", "status_class=\"1xx\""])
                return overHTTP2 == 1 && overHTTP1 == 1 && open == 1 && closed == 1 && answered200 == 1 && answered101 == 1
            }
            withExtendedLifetime(http1) {}  // its tunnel stays open (the gauge's 1) until the counts are read
        }
    }

    @Test(
        "no tunnel without a route that allows it: no token 401, AuthGate's own endpoint 400, another protocol 400, an upstream that does not switch or answers the wrong key 502"
    )
    func refusals() async throws {
        let wrongKey = try await RawWebSocketUpstream.start()
        let noSwitch = try await RawWebSocketUpstream.start(answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        func stopUpstreams() async {
            await wrongKey.stop()
            await noSwitch.stop()
        }
        let extra = """
              - { name: wrong-key, path_prefix: /wrong/, upstreams: ["\(wrongKey.url)"], auth: public }
              - { name: no-switch, path_prefix: /plain/, upstreams: ["\(noSwitch.url)"], auth: public }
            """
        do {
            try await refusals(extra: extra, wrongKey: wrongKey)
        } catch {
            await stopUpstreams()
            throw error
        }
        await stopUpstreams()
    }

    private func refusals(extra: String, wrongKey: RawWebSocketUpstream) async throws {
        try await withGateway("h2-ws-refusals", extra: extra) { server, upstream in
            let client = try await Client(port: server.port)
            let cases: [(UInt32, String, String, String)] = [
                (1, "/ws/secure/chat", "websocket", "401"), (3, "/auth/v1/health", "websocket", "400"), (5, "/ws/chat", "connect-udp", "400"),
                (7, "/ws/chat", "websoc\u{212A}et", "400"), (9, "/wrong/chat", "websocket", "502"), (11, "/plain/chat", "websocket", "502")
            ]
            for (stream, path, name, status) in cases {
                let answer = try await client.connect(stream: stream, path: path, protocol: name)
                #expect(answer[":status"] == [status], "\(path) \(name): \(answer)")
                try await client.read { _ in client.ended(stream: stream) }
            }
            #expect(upstream.requestCount == 0 && upstream.webSocketsEnded == 0, "nothing reached the echo upstream")
            // The upstream that answered with the sample key was asked with a key the gateway made.
            let head = try #require(wrongKey.recorded.first?.head)
            #expect(head.lowercased().contains("upgrade: websocket") && !head.contains("dGhlIHNhbXBsZSBub25jZQ=="), "\(head)")
        }
    }

    @Test("a WebSocket over HTTP/2 carries the caller's identity and is closed with 1008 within 3 s of signing out")
    func revocation() async throws {
        try await withGateway("h2-ws-revoked") { server, _ in
            let (data, _) = try await HTTP.send(HTTP.loopbackURL(port: server.port, path: "/auth/v1/signup"), method: "POST", json: "{}")
            let session = try #require(JSONValue.parse(Array(data)).objectValue)
            let token = try #require(session["access_token"]?.stringValue)
            let userID = try #require(session["user"]?.objectValue?["id"]?.stringValue)
            let client = try await Client(port: server.port)
            let answer = try await client.connect(stream: 1, path: "/ws/secure/chat", fields: [("authorization", "Bearer \(token)")])
            #expect(answer[":status"] == ["200"], "\(answer)")
            try await client.readTunnel(stream: 1, endingWith: Self.text("user=\(userID)"))
            let (_, logout) = try await HTTP.send(
                HTTP.loopbackURL(port: server.port, path: "/auth/v1/logout"), method: "POST", headers: ["Authorization": "Bearer \(token)"])
            #expect(logout.statusCode == 204)
            let revoked = ContinuousClock.now
            try await client.read { _ in Self.webSocketFrames(client.tunnelBytes(stream: 1)).contains { $0.opcode == 0x8 } }
            #expect(ContinuousClock.now - revoked < .seconds(3))
            let close = try #require(Self.webSocketFrames(client.tunnelBytes(stream: 1)).last)
            #expect(close.opcode == 0x8 && close.payload.prefix(2).elementsEqual([0x03, 0xF0]), "1008 (policy violation): \(close)")
            try await client.read { _ in client.ended(stream: 1) }
            try await waitUntil("the tunnel counted as ended with its session", deadline: .seconds(10)) {
                let ended = try await Self.metric(server, "authgate_websocket_tunnels_closed_total", ["outcome=\"session_ended\""])
                let open = try await Self.metric(server, "authgate_websocket_tunnels")
                return ended == 1 && open == 0
            }
        }
    }

    /// An HTTP/1.1 WebSocket handshake to `path`: the connection and the answer's head.
    private static func http1Handshake(_ server: AuthGateServer, path: String = "/ws/chat") async throws -> (RawConnection, String) {
        let connection = try RawConnection(port: server.port)
        await connection.send(
            "GET \(path) HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        return (connection, String(decoding: await connection.receiveHead(), as: UTF8.self))
    }

    /// Over HTTP/2 one connection carries as many tunnels as it may open streams, each with an
    /// upstream connection of its own: `server.max_connections` no longer bounded them.
    @Test(
        "proxy.max_websocket_tunnels bounds the tunnels of both protocols together: one more is 503 websocket_tunnel_limit; failed handshakes and ended tunnels give their places back"
    )
    func tunnelLimit() async throws {
        let noSwitch = try await RawWebSocketUpstream.start(answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let extra = """
              - { name: no-switch, path_prefix: /plain/, upstreams: ["\(noSwitch.url)"], auth: public }
            proxy: { max_websocket_tunnels: 2 }
            """
        do {
            try await withGateway("h2-ws-limit", extra: extra) { server, _ in
                let client = try await Client(port: server.port)
                // Three handshakes the upstream does not switch: each held a place while it lasted.
                for stream: UInt32 in [1, 3, 5] {
                    #expect(try await client.connect(stream: stream, path: "/plain/chat")[":status"] == ["502"])
                    try await client.read { _ in client.ended(stream: stream) }
                }
                // Two tunnels open (a place comes back when the failed handshake's upstream
                // connection has closed, a moment after its 502).
                var stream: UInt32 = 7
                var open: [UInt32] = []
                try await waitUntil("two tunnels open after three failed handshakes", deadline: .seconds(10)) {
                    let status = try await client.connect(stream: stream, path: "/ws/chat")[":status"]
                    if status == ["200"] { open.append(stream) } else { #expect(status == ["503"]) }
                    stream += 2
                    return open.count == 2
                }
                // The limit: a third is refused on either protocol, before any upstream is asked.
                let refused = stream
                #expect(try await client.connect(stream: refused, path: "/ws/chat")[":status"] == ["503"])
                try await client.read { _ in client.ended(stream: refused) }
                #expect(String(decoding: client.tunnelBytes(stream: refused), as: UTF8.self).contains("websocket_tunnel_limit"))
                let (_, head) = try await Self.http1Handshake(server)
                #expect(head.hasPrefix("HTTP/1.1 503"), "\(head)")
                #expect(head.lowercased().contains("x-sb-error-code: websocket_tunnel_limit"), "\(head)")
                #expect(try await Self.metric(server, "authgate_websocket_tunnels") == 2)
                // The upstream is not blamed: ordinary requests still reach it.
                let (_, plain) = try await HTTP.get(HTTP.loopbackURL(port: server.port, path: "/ws/plain"))
                #expect(plain.statusCode == 200)
                // A tunnel ends: its place comes back, and an HTTP/1.1 tunnel takes it.
                await client.send(stream: open[0], opcode: 0x8, [0x03, 0xE8])
                try await client.read { _ in client.ended(stream: open[0]) }
                var http1: RawConnection?
                try await waitUntil("an HTTP/1.1 tunnel opens in the place given back", deadline: .seconds(10)) {
                    let (connection, head) = try await Self.http1Handshake(server)
                    if head.hasPrefix("HTTP/1.1 101") { http1 = connection } else { #expect(head.hasPrefix("HTTP/1.1 503"), "\(head)") }
                    return http1 != nil
                }
                #expect(http1 != nil)
                let (_, again) = try await Self.http1Handshake(server)
                #expect(again.hasPrefix("HTTP/1.1 503"), "both protocols share the places: \(again)")
                // Both tunnels (the HTTP/1.1 one and the HTTP/2 one left open) hold their places
                // until the refusal was seen.
                withExtendedLifetime((http1, client)) {}
            }
        } catch {
            await noSwitch.stop()
            throw error
        }
        await noSwitch.stop()
    }

    @Test("SIGTERM ends a WebSocket over HTTP/2 at once with 1001, and serve exits long before shutdown_timeout")
    func shutdown() async throws {
        try await withGateway("h2-ws-shutdown", server: ", shutdown_timeout: 30s", logLevel: "info") { server, upstream in
            let client = try await Client(port: server.port)
            #expect(try await client.connect(stream: 1, path: "/ws/chat")[":status"] == ["200"])
            try await client.readTunnel(stream: 1, endingWith: Self.text("user=none"))
            let exit = Task { await server.stop(signal: SIGTERM) }
            try await client.readTunnel(stream: 1, endingWith: [0x88, 2, 0x03, 0xE9])
            #expect(await exit.value == 0)
            // A tunnel that held the drain would have been cut when the 30 s ran out.
            #expect(server.drainEnding == "drained", "the drain did not finish of itself: \(server.log.suffix(2000))")
            try await waitUntil("the upstream's WebSocket ended", deadline: .seconds(10)) { upstream.webSocketsEnded == 1 }
        }
    }
}
