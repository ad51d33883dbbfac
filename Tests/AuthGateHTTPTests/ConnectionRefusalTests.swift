import Testing

@testable import AuthGateHTTP

/// The answer to a connection over `server.max_connections`, chosen from the client's first
/// bytes without a socket.
@Suite("Connection refusal")
struct ConnectionRefusalTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    @Test("an HTTP/1.1 request is answered 503 at its first byte; later bytes change nothing")
    func http1() {
        for request in ["GET / HTTP/1.1\r\n", "POST /auth/v1/token HTTP/1.1\r\n", "PRI / HTTP/1.1\r\n", "P", "\r\n"] {
            var refusal = ConnectionRefusal(http2: true)
            #expect(refusal.opened() == nil)
            let bytes = Array(request.utf8)
            let answer = refusal.received(bytes.prefix(1) + [0xFF])
            // A first byte other than `P` decides at once; after `P`, the next byte does.
            #expect(answer == .http1, "\(request)")
            #expect(refusal.received(Self.preface) == nil)
            #expect(refusal.answer == .http1)
        }
    }

    @Test("HTTP/2's preface is answered with SETTINGS and GOAWAY, only once it is whole, however it is cut")
    func http2() {
        for cut in 1...Self.preface.count {
            var refusal = ConnectionRefusal(http2: true)
            var answers: [ConnectionRefusal.Answer] = []
            var rest = Self.preface[...] + [0x00, 0x00]
            while !rest.isEmpty {
                if let answer = refusal.received(rest.prefix(cut)) { answers.append(answer) }
                rest = rest.dropFirst(cut)
            }
            #expect(answers == [.http2], "cut every \(cut) bytes")
        }
        var early = ConnectionRefusal(http2: true)
        #expect(early.received(Self.preface.dropLast()) == nil)
        #expect(early.answer == nil)
    }

    @Test("a preface that turns out not to be one is HTTP/1.1's")
    func nearlyHTTP2() {
        var refusal = ConnectionRefusal(http2: true)
        #expect(refusal.received(Array("PRI * HTTP/2.0\r\n\r\nXX".utf8)) == .http1)
    }

    @Test("without HTTP/2 on the listener, the 503 is written at once")
    func http2Disabled() {
        var refusal = ConnectionRefusal(http2: false)
        #expect(refusal.opened() == .http1)
        #expect(refusal.received(Self.preface) == nil)
    }

    @Test("the HTTP/2 refusal: an empty SETTINGS frame, then GOAWAY for last stream 0 with REFUSED_STREAM and the error code")
    func http2Bytes() {
        let bytes = ConnectionRefusal.Answer.http2.bytes
        #expect(Array(bytes.prefix(9)) == [0, 0, 0, 4, 0, 0, 0, 0, 0])
        let goAway = Array(bytes.dropFirst(9))
        let length = Int(goAway[0]) << 16 | Int(goAway[1]) << 8 | Int(goAway[2])
        #expect(goAway.count == 9 + length)
        #expect(goAway[3] == 7 && goAway[4] == 0 && goAway[5..<9].allSatisfy { $0 == 0 })
        #expect(Array(goAway[9..<17]) == [0, 0, 0, 0, 0, 0, 0, 7])
        #expect(String(decoding: goAway[17...], as: UTF8.self) == "too_many_connections")
        let http1 = String(decoding: ConnectionRefusal.Answer.http1.bytes, as: UTF8.self)
        #expect(
            http1.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") && http1.hasSuffix(#""msg":"The gateway has too many connections; try again"}"#))
    }
}
