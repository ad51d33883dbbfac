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
        for text in ["host", "HOST", "Host", "hOsT"] { #expect(text.equalsLowercaseASCII("host"), "\(text)") }
        for text in ["hos", "hostx", "", "h0st", "ho-t", "hosT ", "\u{212A}ost", "HOS\u{0301}T"] {
            #expect(!text.equalsLowercaseASCII("host"), "\(text.debugDescription)")
        }
        // The Kelvin sign (U+212A) lowers to `k` under Unicode's rules, never here.
        #expect(!"websoc\u{212A}et".equalsLowercaseASCII("websocket"))
        #expect("x-Request-ID"[...].equalsLowercaseASCII("x-request-id"))
        #expect(!"Bearer abc".prefix(5).equalsLowercaseASCII("bearer"))
        // `[` and `{` differ by the bit a letter's case does: not letters, not folded.
        #expect(!"[".equalsLowercaseASCII("{"))
    }
}
