import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import AuthGateHTTP

/// Which HTTP/2 requests name two hosts, and what the check passes on to NIO's codec.
@Suite("HTTP/2 :authority and host")
struct HTTP2AuthorityHostCheckTests {
    private func request(_ fields: [(String, String)]) -> HPACKHeaders {
        HPACKHeaders([(":method", "GET"), (":scheme", "https"), (":path", "/")] + fields)
    }

    @Test(
        "a host field disagrees only when it is the one host field and names another host than :authority",
        arguments: [
            ([(":authority", "api.example")], false), ([(":authority", "api.example"), ("host", "API.Example")], false),
            ([(":authority", "api.example"), ("host", "admin.example")], true), ([(":authority", "api.example"), ("host", "api.example:443")], true),
            ([("host", "api.example")], false),
            // Several host fields reach the gateway as several Host headers already (400).
            ([(":authority", "api.example"), ("host", "a.example"), ("host", "b.example")], false)
        ])
    func disagree(fields: [(String, String)], expected: Bool) {
        #expect((HTTP2AuthorityHostCheck.disagreeingAuthority(request(fields)) == "api.example") == expected)
    }

    @Test("a host differing from :authority by more than ASCII case disagrees: a Kelvin sign is not a k")
    func kelvinSign() {
        let fields = [(":authority", "k.example"), ("host", "\u{212A}.example")]
        #expect(HTTP2AuthorityHostCheck.disagreeingAuthority(request(fields)) == "k.example")
        #expect(HTTP2AuthorityHostCheck.disagreeingAuthority(request([(":authority", "k.example"), ("host", "K.EXAMPLE")])) == nil)
    }

    @Test("a request whose host disagrees is passed on with :authority as a second host field; later frames and agreeing requests as they are")
    func passedOn() throws {
        let channel = EmbeddedChannel(handler: HTTP2AuthorityHostCheck())
        let disagreeing = request([(":authority", "api.example"), ("host", "admin.example")])
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: disagreeing)))
        guard case .headers(let passed) = try #require(try channel.readInbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not a HEADERS frame")
            return
        }
        #expect(passed.headers["host"] == ["admin.example", "api.example"])
        // Trailers (a second HEADERS) are not looked at: the handler has left the pipeline.
        let trailers = HPACKHeaders([("host", "x.example")])
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: trailers)))
        guard case .headers(let later) = try #require(try channel.readInbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not a HEADERS frame")
            return
        }
        #expect(later.headers["host"] == ["x.example"])
        _ = try channel.finish()
    }

    @Test(
        "a request without :authority gets its host field as :authority, or an empty one without a host",
        arguments: [([("host", "api.example")], "api.example"), ([], ""), ([("host", "a.example"), ("host", "b.example")], "a.example")])
    func withoutAuthority(fields: [(String, String)], expected: String) throws {
        let channel = EmbeddedChannel(handler: HTTP2AuthorityHostCheck())
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: request(fields))))
        guard case .headers(let passed) = try #require(try channel.readInbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not a HEADERS frame")
            return
        }
        #expect(passed.headers[":authority"] == [expected])
        #expect(passed.headers["host"] == fields.map(\.1))
        _ = try channel.finish()
    }
}
