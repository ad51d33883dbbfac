import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import AuthGateHTTP

/// The HTTP/2 answer's fields that never repeat stay out of HPACK's dynamic table: the request id
/// is sent literally (`nonIndexable`), a cookie `neverIndexed`; the rest, order and values as the
/// codec made them.
@Suite("HTTP/2 response field indexing")
struct HTTP2ResponseFieldIndexingTests {
    /// An answer's head as NIO's codec makes it (lower-case names, every field indexable).
    private func head(requestID: String, cookies: [String] = []) -> HPACKHeaders {
        var fields = HPACKHeaders()
        fields.add(name: ":status", value: "200")
        fields.add(name: "content-type", value: "application/json")
        fields.add(name: "x-request-id", value: requestID)
        for cookie in cookies { fields.add(name: "set-cookie", value: cookie) }
        fields.add(name: "content-length", value: "2")
        return fields
    }

    /// What the handler writes for `payload`.
    private func written(_ payload: HTTP2Frame.FramePayload) throws -> HTTP2Frame.FramePayload? {
        let channel = EmbeddedChannel(handler: HTTP2ResponseFieldIndexing())
        defer { _ = try? channel.finish() }
        try channel.writeOutbound(payload)
        return try channel.readOutbound(as: HTTP2Frame.FramePayload.self)
    }

    private func fields(of payload: HTTP2Frame.FramePayload?) -> [(name: String, value: String, indexable: HPACKIndexing)] {
        guard case .headers(let frame) = payload else { return [] }
        return Array(frame.headers)
    }

    @Test("the request id is nonIndexable and each cookie neverIndexed; every field kept, in order, with its value; endStream kept")
    func fieldsReindexed() throws {
        let input = head(requestID: "7f3c0c4e-2c1e-4c5e-9d0a-3b1f0a6f9e21", cookies: ["a=1; HttpOnly", "b=2"])
        guard case .headers(let frame) = try written(.headers(.init(headers: input, endStream: true))) else {
            Issue.record("no HEADERS written")
            return
        }
        let out = Array(frame.headers)
        #expect(out.map(\.name) == input.map(\.name))
        #expect(out.map(\.value) == input.map(\.value))
        #expect(
            out.map(\.indexable) == [.indexable, .indexable, .nonIndexable, .neverIndexed, .neverIndexed, .indexable])
        #expect(frame.endStream)
    }

    @Test("a head without such fields, one already marked, and DATA frames pass as they are")
    func othersUntouched() throws {
        var plain = HPACKHeaders()
        plain.add(name: ":status", value: "204")
        plain.add(name: "date", value: "Sat, 28 Nov 2026 22:00:00 GMT")
        #expect(HTTP2ResponseFieldIndexing.reindexed(plain) == nil)
        #expect(fields(of: try written(.headers(.init(headers: plain)))).map(\.indexable) == [.indexable, .indexable])
        var marked = HPACKHeaders()
        marked.add(name: "x-request-id", value: "r", indexing: .nonIndexable)
        #expect(HTTP2ResponseFieldIndexing.reindexed(marked) == nil)
        // Names are matched whole: neither a longer nor a shorter name is reindexed.
        var lookAlikes = HPACKHeaders()
        lookAlikes.add(name: "x-request-ids", value: "r")
        lookAlikes.add(name: "set-cookie2", value: "c")
        lookAlikes.add(name: "x-request-i", value: "r")
        #expect(HTTP2ResponseFieldIndexing.reindexed(lookAlikes) == nil)
        let body = ByteBuffer(string: "{}")
        guard case .data(let data) = try written(.data(.init(data: .byteBuffer(body), endStream: true))), case .byteBuffer(let bytes) = data.data
        else {
            Issue.record("no DATA written")
            return
        }
        #expect(bytes == body && data.endStream)
    }

    /// The point of it: a connection's encoder, given a thousand answers with a request id each,
    /// keeps its dynamic table at what the first answer's repeated fields took. Without the
    /// handler every request id takes an entry and the table fills to its limit.
    @Test("a thousand answers through one HPACK encoder: the table holds the repeated fields only; a decoder reads every field back")
    func dynamicTableKeepsRepeatedFields() throws {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var sizeAfterFirst: Int?
        for answer in 0..<1000 {
            let input = head(requestID: "request-\(answer)-\(String(repeating: "x", count: 24))", cookies: ["s=\(answer)"])
            let out = HTTP2ResponseFieldIndexing.reindexed(input) ?? input
            var block = ByteBuffer()
            try encoder.encode(headers: out, to: &block)
            let decoded = try decoder.decodeHeaders(from: &block)
            #expect(decoded.map(\.name) == input.map(\.name) && decoded.map(\.value) == input.map(\.value))
            #expect(decoded.first { $0.name == "x-request-id" }?.indexable == .nonIndexable)
            #expect(decoded.first { $0.name == "set-cookie" }?.indexable == .neverIndexed)
            if let sizeAfterFirst {
                #expect(encoder.dynamicTableSize == sizeAfterFirst, "answer \(answer)")
            } else {
                sizeAfterFirst = encoder.dynamicTableSize
            }
        }
        // The repeated fields (content-type, content-length) and nothing else: each entry is its
        // name, its value and 32 bytes.
        #expect(sizeAfterFirst == ("content-type" + "application/json").utf8.count + 32 + ("content-length" + "2").utf8.count + 32)
    }
}
