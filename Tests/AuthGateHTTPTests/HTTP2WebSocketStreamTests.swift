import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import AuthGateHTTP

/// RFC 8441 on one stream, without a connection: the extended CONNECT handed on as the HTTP/1.1
/// handshake, the upstream's answer handed back, what the client sends meanwhile held for the
/// tunnel, and the stream's DATA as the tunnel's bytes.
@Suite("WebSocket over HTTP/2 (RFC 8441)")
struct HTTP2WebSocketStreamTests {
    private static let connect = HPACKHeaders([
        (":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", "/ws/chat?room=1"), (":authority", "gw.example"),
        ("sec-websocket-version", "13"), ("sec-websocket-protocol", "chat"), ("sec-websocket-key", "Y2xpZW50J3Mgb3du")
    ])

    @Test("an extended CONNECT becomes a bodiless GET with Upgrade, Connection and the gateway's key; any other block is left alone")
    func upgradeRequest() throws {
        let translated = try #require(HTTP2WebSocketHandshake.upgradeRequest(Self.connect, key: "dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(translated[":method"] == ["GET"] && translated[":protocol"].isEmpty)
        #expect(translated[":path"] == ["/ws/chat?room=1"] && translated[":authority"] == ["gw.example"] && translated[":scheme"] == ["https"])
        #expect(translated["upgrade"] == ["websocket"] && translated["connection"] == ["upgrade"])
        // The client's own key (RFC 8441 clients send none) never reaches the upstream: the gateway checks the answer to its own.
        #expect(translated["sec-websocket-key"] == ["dGhlIHNhbXBsZSBub25jZQ=="])
        #expect(translated["sec-websocket-protocol"] == ["chat"] && translated["sec-websocket-version"] == ["13"])
        let pseudo = translated.map(\.name).prefix { $0.hasPrefix(":") }
        #expect(pseudo.count == 4, "pseudo-header fields first: \(translated.map(\.name))")
        #expect(HTTP2WebSocketHandshake.upgradeRequest(HPACKHeaders([(":method", "GET"), (":path", "/")]), key: "k") == nil)
        // Another protocol is named as it is, for the gateway's rule on upgrades to refuse; a
        // look-alike of `websocket` (a Kelvin sign for the k) is not `websocket`.
        for other in ["connect-udp", "websoc\u{212A}et"] {
            var block = Self.connect
            block.replaceOrAdd(name: ":protocol", value: other)
            #expect(HTTP2WebSocketHandshake.upgradeRequest(block, key: "k")?["upgrade"] == [other])
        }
        var shouted = Self.connect
        shouted.replaceOrAdd(name: ":protocol", value: "WebSocket")
        #expect(HTTP2WebSocketHandshake.upgradeRequest(shouted, key: "k")?["upgrade"] == ["websocket"])
    }

    @Test("the upstream's 101 becomes 200 without the HTTP/1.1 handshake's fields; another 2xx becomes 502; refusals pass")
    func connectAnswer() {
        let switched = HPACKHeaders([
            (":status", "101"), ("upgrade", "websocket"), ("connection", "upgrade"), ("sec-websocket-accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            ("sec-websocket-protocol", "chat"), ("x-request-id", "r1")
        ])
        let opened = HTTP2WebSocketHandshake.connectAnswer(switched)
        #expect(opened.opensTunnel)
        #expect(opened.headers.map(\.name) == [":status", "sec-websocket-protocol", "x-request-id"] && opened.headers[":status"] == ["200"])
        for (status, expected) in [("200", "502"), ("204", "502"), ("401", "401"), ("502", "502"), ("302", "302"), ("426", "426")] {
            let answer = HTTP2WebSocketHandshake.connectAnswer(HPACKHeaders([(":status", status), ("content-length", "0")]))
            #expect(!answer.opensTunnel && answer.headers[":status"] == [expected], "\(status)")
        }
    }

    @Test("the accept value is RFC 6455's, and exactly one field with it is accepted")
    func acceptValue() {
        #expect(HTTP2WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(HTTP2WebSocketHandshake.accepts(["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="], key: "dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(!HTTP2WebSocketHandshake.accepts([], key: "dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(!HTTP2WebSocketHandshake.accepts(["s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="], key: "dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(!HTTP2WebSocketHandshake.accepts(["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="], key: "b3RoZXIga2V5IGZvciB1cw=="))
        let keys = Set((0..<100).map { _ in HTTP2WebSocketHandshake.newKey() })
        #expect(keys.count == 100 && keys.allSatisfy { $0.utf8.count == 24 })
    }

    /// Records the user events that reach the end of the pipeline.
    private final class Events: ChannelInboundHandler {
        typealias InboundIn = Any
        var seen: [String] = []
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            seen.append(event is ChannelShouldQuiesceEvent ? "quiesce" : "\(event)")
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.fireChannelRead(data) }
    }

    private func data(_ text: String, endStream: Bool = false) -> HTTP2Frame.FramePayload {
        .data(.init(data: .byteBuffer(ByteBuffer(string: text)), endStream: endStream))
    }

    @Test("an extended CONNECT is handed on as the handshake; what follows waits, unread, until the relay is there; the 101 goes out as 200")
    func tunnel() throws {
        let webSockets = HTTP2WebSocketStreams()
        let stream = HTTP2WebSocketStream(webSockets: webSockets)
        let events = Events()
        let channel = EmbeddedChannel(handlers: [stream, events])
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.connect)))
        guard case .headers(let handedOn) = try #require(try channel.readInbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not a HEADERS frame")
            return
        }
        #expect(handedOn.endStream, "a bodiless request to the gateway")
        #expect(handedOn.headers[":method"] == ["GET"] && handedOn.headers["upgrade"] == ["websocket"])
        #expect(stream.state == .handshake)
        // Frames the client sends before the tunnel is built wait; the stream is not read.
        try channel.writeInbound(data("early"))
        try channel.writeInbound(data("", endStream: true))
        #expect(try channel.readInbound(as: HTTP2Frame.FramePayload.self) == nil)
        // Graceful shutdown reaches a WebSocket stream.
        webSockets.quiesce()
        #expect(events.seen == ["quiesce"])
        let key = try #require(handedOn.headers.first(name: "sec-websocket-key"))
        try channel.writeOutbound(
            HTTP2Frame.FramePayload.headers(
                .init(
                    headers: HPACKHeaders([
                        (":status", "101"), ("upgrade", "websocket"), ("connection", "upgrade"),
                        ("sec-websocket-accept", HTTP2WebSocketHandshake.acceptValue(for: key))
                    ]))))
        guard case .headers(let answer) = try #require(try channel.readOutbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not a HEADERS frame")
            return
        }
        #expect(answer.headers.map(\.name) == [":status"] && answer.headers[":status"] == ["200"] && !answer.endStream)
        #expect(stream.state == .opened)
        try channel.pipeline.syncOperations.addHandler(HTTP2TunnelFraming(), position: .after(stream))
        stream.startRelaying()
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "early"))
        #expect(events.seen == ["quiesce", "inputClosed"], "the client's END_STREAM ends the tunnel's input")
        // Bytes written go out as DATA; closing ends our side with END_STREAM first.
        try channel.writeOutbound(ByteBuffer(string: "frame"))
        guard case .data(let written) = try #require(try channel.readOutbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not DATA")
            return
        }
        #expect(written.data == .byteBuffer(ByteBuffer(string: "frame")) && !written.endStream)
        try channel.close().wait()
        guard case .data(let last) = try #require(try channel.readOutbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not DATA")
            return
        }
        #expect(last.endStream)
    }

    @Test("a refused handshake goes out as it is and what the client sends afterwards is dropped; a plain request leaves the handler behind")
    func refusedAndPlain() throws {
        let webSockets = HTTP2WebSocketStreams()
        let stream = HTTP2WebSocketStream(webSockets: webSockets)
        let events = Events()
        let channel = EmbeddedChannel(handlers: [stream, events])
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.connect)))
        _ = try channel.readInbound(as: HTTP2Frame.FramePayload.self)
        try channel.writeOutbound(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "401")]))))
        guard case .headers(let answer) = try #require(try channel.readOutbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not a HEADERS frame")
            return
        }
        #expect(answer.headers[":status"] == ["401"] && stream.state == .refused)
        try channel.writeInbound(data("late"))
        #expect(try channel.readInbound(as: HTTP2Frame.FramePayload.self) == nil)
        _ = try channel.finish()

        let plain = EmbeddedChannel(handlers: [HTTP2WebSocketStream(webSockets: webSockets), Events()])
        try plain.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":method", "GET"), (":path", "/")]))))
        #expect(try plain.readInbound(as: HTTP2Frame.FramePayload.self) != nil)
        #expect((try? plain.pipeline.syncOperations.handler(type: HTTP2WebSocketStream.self)) == nil, "left the pipeline")
        webSockets.quiesce()
        #expect(try plain.readInbound(as: HTTP2Frame.FramePayload.self) == nil)
        _ = try plain.finish()
    }
}
