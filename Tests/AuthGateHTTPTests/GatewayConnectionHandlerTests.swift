import AuthGateCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import AuthGateHTTP

/// The connection handler and its exchanges on in-memory channels: the client's connection and
/// every upstream connection are `EmbeddedChannel`s on one `EmbeddedEventLoop`, so each step
/// (a part arriving, an upstream answering, a side hanging up) happens exactly when the test says.
@Suite("Gateway connection handler (no sockets)", .timeLimit(.minutes(3)))
struct GatewayConnectionHandlerTests {
    /// Hands out embedded upstream connections and keeps them for the test to drive.
    final class EmbeddedConnector: UpstreamConnector, @unchecked Sendable {
        let loop: EmbeddedEventLoop
        private let lock = NIOLock()
        private var made: [EmbeddedChannel] = []

        init(loop: EmbeddedEventLoop) {
            self.loop = loop
        }

        var channels: [EmbeddedChannel] { lock.withLock { made } }

        func connect(_ key: UpstreamConnectionPool.Key, on eventLoop: any EventLoop, timeout: TimeAmount, tunnel: Bool)
            -> EventLoopFuture<any Channel>
        {
            let channel = EmbeddedChannel(handler: UpstreamChannelHandler(), loop: loop)
            do {
                _ = channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1))
            } catch {
                return loop.makeFailedFuture(error)
            }
            lock.withLock { made.append(channel) }
            return loop.makeSucceededFuture(channel)
        }
    }

    /// A client connection through the production handler, in front of embedded upstreams.
    struct Rig {
        let loop: EmbeddedEventLoop
        let client: EmbeddedChannel
        let connector: EmbeddedConnector

        /// With `encodes`, the client's pipeline has the HTTP/1 encoder, as a real connection has,
        /// and the client is sent bytes (``bytes()``) instead of parts.
        init(maxBody: String = "1MiB", encodes: Bool = false) throws {
            loop = EmbeddedEventLoop()
            connector = EmbeddedConnector(loop: loop)
            let configuration = try AuthGateConfiguration.parse(
                yaml: "routes: [ { name: open, path_prefix: /up/, upstreams: [http://127.0.0.1:1], auth: public, max_body: \(maxBody) } ]",
                baseDirectory: "", environment: [:]
            )
            let pool = UpstreamConnectionPool(maxConnectionsPerUpstream: 8, group: loop, connector: connector)
            let dependencies = GatewayApplication.Dependencies(
                configuration: configuration, store: MemoryAuthStore(), keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true),
                upstreamConnections: pool
            )
            let encoder = encodes ? HTTP1ResponseEncoder() : nil
            let handler = GatewayConnectionHandler(
                proxy: dependencies.edge, connectionGuard: nil, logger: Logger(label: "test"), drainTimeout: .seconds(5), tracing: false,
                eventLoop: loop, responseEncoder: encoder
            )
            client = EmbeddedChannel(handlers: ([encoder] as [(any ChannelHandler)?] + [handler]).compactMap { $0 }, loop: loop)
            _ = client.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 2))
        }

        func send(_ parts: HTTPServerRequestPart...) throws {
            for part in parts { try client.writeInbound(part) }
            client.pipeline.fireChannelReadComplete()
        }

        /// `parts` as what one read of the socket decodes into: each passed on, then one end of
        /// the read (``send(_:)`` ends a read after each part, as `writeInbound` does).
        func sendInOneRead(_ parts: [HTTPServerRequestPart]) throws {
            for part in parts { client.pipeline.syncOperations.fireChannelRead(NIOAny(part)) }
            client.pipeline.fireChannelReadComplete()
            try client.throwIfErrorCaught()
        }

        func head(_ method: HTTPMethod, _ uri: String, _ headers: HTTPHeaders = [:]) -> HTTPServerRequestPart {
            var headers = headers
            headers.add(name: "Host", value: "gateway")
            return .head(HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers))
        }

        /// Everything the client has been sent so far.
        func responses() throws -> [HTTPServerResponsePart] {
            var parts: [HTTPServerResponsePart] = []
            while let part = try client.readOutbound(as: HTTPServerResponsePart.self) { parts.append(part) }
            return parts
        }

        /// Every byte the client has been sent so far (a rig that `encodes`).
        func bytes() throws -> String {
            var text = ""
            while let part = try client.readOutbound(as: IOData.self) {
                if case .byteBuffer(let buffer) = part { text += String(buffer: buffer) }
            }
            return text
        }

        /// Everything upstream `index` has been sent so far.
        func upstreamReceived(_ index: Int) throws -> [HTTPClientRequestPart] {
            var parts: [HTTPClientRequestPart] = []
            while let part = try connector.channels[index].readOutbound(as: HTTPClientRequestPart.self) { parts.append(part) }
            return parts
        }

        /// `parts` as what one read of upstream `index`'s socket decodes into.
        func upstreamSendsInOneRead(_ index: Int, _ parts: [HTTPClientResponsePart]) throws {
            let upstream = connector.channels[index]
            for part in parts { upstream.pipeline.syncOperations.fireChannelRead(NIOAny(part)) }
            upstream.pipeline.fireChannelReadComplete()
            try upstream.throwIfErrorCaught()
        }

        func upstreamAnswers(_ index: Int, status: HTTPResponseStatus = .ok, body: String = "ok", keepAlive: Bool = true) throws {
            let upstream = connector.channels[index]
            var headers: HTTPHeaders = ["Content-Length": String(body.utf8.count)]
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            try upstream.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
            try upstream.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: body)))
            try upstream.writeInbound(HTTPClientResponsePart.end(nil))
            upstream.pipeline.fireChannelReadComplete()
        }
    }

    private func status(_ parts: [HTTPServerResponsePart]) -> [UInt] {
        parts.compactMap { if case .head(let head) = $0 { return head.status.code } else { return nil } }
    }

    /// The body parts among `parts` (sent to an upstream or to the client), in order.
    private func bodies<Head>(_ parts: [HTTPPart<Head, IOData>]) -> [ByteBuffer] {
        parts.compactMap { part in
            if case .body(.byteBuffer(let buffer)) = part { return buffer } else { return nil }
        }
    }

    private func bodyBytes(_ parts: [HTTPClientRequestPart]) -> Int {
        bodies(parts).reduce(0) { $0 + $1.readableBytes }
    }

    @Test("an answer to HEAD reaches the client without a body even when the upstream sends one; the next request's answer has its body")
    func headAnswerHasNoBody() throws {
        let rig = try Rig(encodes: true)
        try rig.send(rig.head(.HEAD, "/up/a"), .end(nil))
        // An upstream that breaks RFC 9110 §9.3.2: its answer to HEAD carries two bytes.
        try rig.upstreamAnswers(0, body: "ok")
        try rig.send(rig.head(.GET, "/up/b"), .end(nil))
        try rig.upstreamAnswers(0, body: "hi")
        let text = try rig.bytes()
        let answers = text.split(separator: "HTTP/1.1 ")
        #expect(answers.count == 2, "\(text)")
        #expect(answers.first?.hasSuffix("\r\n\r\n") == true && answers.first?.contains("Content-Length: 2") == true, "\(text)")
        #expect(answers.last?.hasSuffix("\r\n\r\nhi") == true, "\(text)")
    }

    @Test("small body parts reach the upstream gathered until they make 8 KiB (or the read ends), large ones as they come, every byte in order")
    func smallPartsGathered() throws {
        let rig = try Rig()
        var sent: [UInt8] = []
        func part(_ count: Int) -> HTTPServerRequestPart {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255) }
            sent += bytes
            return .body(ByteBuffer(bytes: bytes))
        }
        // One read's worth: 20,000 one-byte parts (a client's 1-byte chunks), then a large part,
        // then a few small ones that the end of the read writes.
        try rig.sendInOneRead(
            [rig.head(.POST, "/up/upload", ["Transfer-Encoding": "chunked"])] + (0..<20_000).map { _ in part(1) } + [part(65_536)]
                + (0..<3).map { _ in part(100) })
        var received = try rig.upstreamReceived(0)
        // The next read: a part that fills a gathered one, then the end.
        try rig.sendInOneRead([part(5_000), part(5_000), .end(nil)])
        received += try rig.upstreamReceived(0)
        let bodies = self.bodies(received)
        #expect(Array(bodies.map { Array($0.readableBytesView) }.joined()) == sent, "the upstream got the body's bytes in order")
        let sizes = bodies.map(\.readableBytes)
        #expect(sizes == [8192, 8192, 3616, 65_536, 300, 10_000], "\(sizes.count) parts: \(sizes.prefix(8))...")
        guard case .end = received.last else { Issue.record("the request did not end: \(received.suffix(2))"); return }
    }

    @Test("small response parts reach the client gathered up to 8 KiB (or to the upstream's read end), large ones as they come, bytes in order")
    func smallResponsePartsGathered() throws {
        let rig = try Rig()
        try rig.send(rig.head(.GET, "/up/stream"), .end(nil))
        _ = try rig.upstreamReceived(0)
        var sent: [UInt8] = []
        func part(_ count: Int) -> HTTPClientResponsePart {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255) }
            sent += bytes
            return .body(ByteBuffer(bytes: bytes))
        }
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"])
        // One read of the upstream: the head, 20,000 one-byte chunks, a large one, a few small
        // ones that the end of the read writes.
        try rig.upstreamSendsInOneRead(0, [.head(head)] + (0..<20_000).map { _ in part(1) } + [part(65_536)] + (0..<3).map { _ in part(100) })
        var received = try rig.responses()
        #expect(received.count == 6, "the head and five parts, all written by the end of the read: \(received.count)")
        // The next read: a small part, then a part that fills a gathered one, a small one and the end.
        try rig.upstreamSendsInOneRead(0, [part(3_000), part(5_192), part(10), .end(nil)])
        received += try rig.responses()
        #expect(status(received) == [200])
        let bodies = self.bodies(received)
        #expect(Array(bodies.map { Array($0.readableBytesView) }.joined()) == sent, "the client got the body's bytes in order")
        let sizes = bodies.map(\.readableBytes)
        #expect(sizes == [8192, 8192, 3616, 65_536, 300, 8192, 10], "\(sizes.count) parts: \(sizes.prefix(8))...")
        guard case .end = received.last else { Issue.record("the response did not end: \(received.suffix(2))"); return }
        #expect(rig.client.isActive)
    }

    @Test("the upstream answers before the body ends: relayed, its connection closed, the rest drained, and the next request served")
    func responseBeforeBodyEnds() throws {
        let rig = try Rig()
        try rig.send(rig.head(.POST, "/up/upload", ["Content-Length": "300000"]), .body(ByteBuffer(repeating: 1, count: 65_536)))
        #expect(bodyBytes(try rig.upstreamReceived(0)) == 65_536)
        try rig.upstreamAnswers(0)
        let parts = try rig.responses()
        #expect(status(parts) == [200])
        guard case .end = parts.last else { Issue.record("the response did not end: \(parts)"); return }
        #expect(!rig.connector.channels[0].isActive, "a connection whose request was not sent whole is not reused")
        // The rest of the body arrives and is discarded; the upstream sees none of it.
        try rig.send(.body(ByteBuffer(repeating: 1, count: 200_000)), .body(ByteBuffer(repeating: 1, count: 34_464)), .end(nil))
        try rig.send(rig.head(.GET, "/up/next"), .end(nil))
        #expect(rig.connector.channels.count == 2, "the next request gets a fresh connection")
        let next = try rig.upstreamReceived(1)
        guard case .head(let head) = next.first else { Issue.record("the next request was not forwarded"); return }
        #expect(head.uri == "/up/next")
        try rig.upstreamAnswers(1)
        #expect(status(try rig.responses()) == [200])
        #expect(rig.client.isActive)
    }

    @Test("the client hangs up mid-body: the upstream connection closes")
    func clientHangsUpMidBody() throws {
        let rig = try Rig()
        try rig.send(rig.head(.POST, "/up/upload", ["Transfer-Encoding": "chunked"]), .body(ByteBuffer(repeating: 1, count: 1000)))
        #expect(rig.connector.channels[0].isActive)
        _ = rig.client.close()
        rig.loop.run()
        #expect(!rig.connector.channels[0].isActive)
    }

    @Test("the upstream hangs up mid-body: 502, the rest of the body is drained, the connection goes on")
    func upstreamHangsUpMidBody() throws {
        let rig = try Rig()
        try rig.send(rig.head(.POST, "/up/upload", ["Content-Length": "2000"]), .body(ByteBuffer(repeating: 1, count: 1000)))
        _ = rig.connector.channels[0].close()
        rig.loop.run()
        let parts = try rig.responses()
        #expect(status(parts) == [502])
        try rig.send(.body(ByteBuffer(repeating: 1, count: 1000)), .end(nil))
        try rig.send(rig.head(.GET, "/up/next"), .end(nil))
        try rig.upstreamAnswers(1)
        #expect(status(try rig.responses()) == [200])
    }

    @Test("pipelined requests: the second reaches the upstream only after the first's response, and answers stay in order")
    func pipelined() throws {
        let rig = try Rig()
        try rig.send(rig.head(.GET, "/up/1"), .end(nil), rig.head(.GET, "/up/2"), .end(nil))
        let first = try rig.upstreamReceived(0)
        #expect(first.count == 2, "head and end of the first request only")
        try rig.upstreamAnswers(0, body: "one")
        let second = try rig.upstreamReceived(0)
        guard case .head(let head) = second.first else { Issue.record("the second request did not follow"); return }
        #expect(head.uri == "/up/2")
        try rig.upstreamAnswers(0, body: "two")
        #expect(bodies(try rig.responses()).map { String(buffer: $0) } == ["one", "two"])
        #expect(rig.connector.channels.count == 1, "one kept-alive upstream connection served both")
    }

    @Test("a chunked body over max_body: 413 with Connection: close; both connections close")
    func bodyOverLimit() throws {
        let rig = try Rig(maxBody: "100B")
        try rig.send(rig.head(.POST, "/up/upload", ["Transfer-Encoding": "chunked"]), .body(ByteBuffer(repeating: 1, count: 60)))
        try rig.send(.body(ByteBuffer(repeating: 1, count: 60)))
        rig.loop.run()
        let parts = try rig.responses()
        #expect(status(parts) == [413])
        if case .head(let head) = parts.first { #expect(head.headers["Connection"] == ["close"]) }
        #expect(!rig.client.isActive)
        #expect(!rig.connector.channels[0].isActive)
    }

    @Test("an announced body over max_body: 413 before any upstream connection")
    func announcedOverLimit() throws {
        let rig = try Rig(maxBody: "100B")
        try rig.send(rig.head(.POST, "/up/upload", ["Content-Length": "101"]))
        rig.loop.run()
        #expect(status(try rig.responses()) == [413])
        #expect(rig.connector.channels.isEmpty)
        #expect(!rig.client.isActive)
    }

    @Test("the upstream connection is reused only when both directions completed")
    func reuse() throws {
        let rig = try Rig()
        try rig.send(rig.head(.GET, "/up/a"), .end(nil))
        try rig.upstreamAnswers(0)
        try rig.send(rig.head(.PUT, "/up/b", ["Content-Length": "4"]), .body(ByteBuffer(string: "data")), .end(nil))
        #expect(rig.connector.channels.count == 1, "a complete exchange hands its connection back")
        #expect(bodyBytes(try rig.upstreamReceived(0)) == 4)
        try rig.upstreamAnswers(0, keepAlive: false)
        #expect(!rig.connector.channels[0].isActive, "the upstream said close")
        try rig.send(rig.head(.GET, "/up/c"), .end(nil))
        #expect(rig.connector.channels.count == 2)
        _ = try rig.responses()
    }

    @Test("requests for AuthGate's own paths go on to Hummingbird with their target normalized; refusals are answered here")
    func applicationAndRefusals() throws {
        let rig = try Rig()
        try rig.send(rig.head(.GET, "//auth/v1/./health?x=1"), .end(nil))
        guard case .head(let passed) = try rig.client.readInbound(as: HTTPServerRequestPart.self) else { Issue.record("not passed on"); return }
        #expect(passed.uri == "/auth/v1/health?x=1")
        #expect(try rig.client.readInbound(as: HTTPServerRequestPart.self) == .end(nil))
        try rig.client.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "0"])))
        try rig.client.writeOutbound(HTTPServerResponsePart.end(nil))
        rig.loop.run()
        _ = try rig.responses()
        try rig.send(rig.head(.GET, "/up/%2e%2e/%2e%2e/etc"), .end(nil))
        let parts = try rig.responses()
        #expect(status(parts) == [400])
        #expect(!rig.client.isActive, "a refused target closes the connection")
        #expect(rig.connector.channels.isEmpty, "nothing reached an upstream")
    }
}
