import Testing

@testable import AuthGateHTTP

/// The framing budget of a chunked request body, without sockets.
@Suite("Request body framing")
struct RequestBodyFramingTests {
    @Test("framing beyond 16 KiB plus 16 bytes and twice the data of each part is too much; nothing is counted outside a body")
    func budget() {
        var framing = RequestBodyFraming()
        framing.read(1 << 20)
        #expect(!framing.exceeded && framing.wire == 0, "no body is open")
        framing.headDecoded()
        framing.read(RequestBodyFraming.allowance)
        #expect(!framing.exceeded, "the allowance itself")
        framing.read(1)
        #expect(framing.exceeded, "one byte of framing past it, with no data")
        framing.stop()
        #expect(!framing.exceeded)

        // 1,000 one-byte parts: 16 + 2 bytes of framing each, and the 16 KiB between them (16 more each).
        for (perPart, exceeded) in [(1 + 18, false), (1 + 18 + 16, false), (1 + 18 + 17, true)] {
            framing.headDecoded()
            for _ in 0..<1000 {
                framing.read(perPart)
                framing.dataDecoded(1)
            }
            #expect(framing.exceeded == exceeded, "\(perPart) bytes a part")
        }

        // A long body in large parts has room to spare; a new head starts from nothing.
        framing.headDecoded()
        for _ in 0..<1000 {
            framing.read(8192 + 8)
            framing.dataDecoded(8192)
        }
        #expect(!framing.exceeded)
        framing.headDecoded()
        #expect(framing.wire == 0 && framing.data == 0 && framing.parts == 0)
    }

    @Test("counts that would overflow saturate instead of trapping")
    func saturates() {
        var framing = RequestBodyFraming()
        framing.headDecoded()
        framing.read(.max)
        framing.read(.max)
        #expect(framing.wire == .max && framing.exceeded)
        framing.dataDecoded(.max)
        framing.dataDecoded(.max)
        #expect(framing.data == .max && !framing.exceeded, "as much data as framing")
    }
}
