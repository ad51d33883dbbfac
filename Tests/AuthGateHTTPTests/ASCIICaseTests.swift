import Testing

@testable import AuthGateHTTP

@Suite("ASCII case folding over bytes")
struct ASCIICaseTests {
    @Test("only A-Z are lowered; every other of the 256 byte values is kept")
    func lowered() {
        for value in 0...255 {
            let byte = UInt8(value)
            let expected = (65...90).contains(value) ? byte + 32 : byte
            #expect(ASCIICase.lowered(byte) == expected, "byte \(value)")
        }
    }

    @Test("letters match without regard to case, every other byte exactly, lengths must agree")
    func equals() {
        for text in ["host", "HOST", "Host", "hOsT"] { #expect(ASCIICase.equals(text, lower: "host"), "\(text)") }
        for text in ["hos", "hostx", "", "h0st", "ho-t", "hosT ", "\u{212A}ost", "HOS\u{0301}T"] {
            #expect(!ASCIICase.equals(text, lower: "host"), "\(text.debugDescription)")
        }
        // The Kelvin sign (U+212A) lowers to `k` under Unicode's rules, never here.
        #expect(!ASCIICase.equals("websoc\u{212A}et", lower: "websocket"))
        #expect(ASCIICase.equals("x-Request-ID"[...], lower: "x-request-id"))
        #expect(!ASCIICase.equals("Bearer abc".prefix(5), lower: "bearer"))
        // `[` and `{` differ by the bit a letter's case does: not letters, not folded.
        #expect(!ASCIICase.equals("[", lower: "{"))
    }
}
