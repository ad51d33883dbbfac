import Testing

@testable import AuthGateCore

/// UUID text is read in one strict form (the ids in refresh tokens and the admin API's lookups).
@Suite("UUID text")
struct UUIDBytesTests {
    @Test("either case reads; the text written is lower case")
    func canonical() {
        let lower = "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a11"
        #expect(UUIDBytes.canonical(lower) == lower)
        #expect(UUIDBytes.canonical(lower.uppercased()) == lower)
        #expect(
            UUIDBytes.bytes(of: lower)
                == [0x5b, 0x0c, 0x3a, 0x6e, 0x2f, 0x7d, 0x4c, 0x1e, 0x9a, 0x51, 0x0d, 0x6c, 0x1f, 0x0e, 0x7a, 0x11])
        for _ in 0..<1000 {
            let id = UUIDBytes.random()
            #expect(UUIDBytes.canonical(id) == id)
            #expect(id.utf8.count == 36)
        }
    }

    @Test(
        "anything but 8-4-4-4-12 hex digits is refused",
        arguments: [
            "",
            "5b0c3a6e2f7d4c1e9a510d6c1f0e7a11",  // no dashes
            "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a1",  // short
            "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a111",  // long
            "5b0c3a6e2-f7d-4c1e-9a51-0d6c1f0e7a11",  // a dash moved
            "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a1-",  // a dash for a digit
            "-5b0c3a6e2f7d-4c1e-9a51-0d6c1f0e7a11",
            "5b0c3a6e-+f7d-4c1e-9a51-0d6c1f0e7a11",  // a sign, which integer parsing takes
            "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7g11",  // not hex
            "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a\u{00e9}",  // 36 bytes, not ASCII
            "5b0c3a6e 2f7d 4c1e 9a51 0d6c1f0e7a11"
        ])
    func refused(_ text: String) {
        #expect(UUIDBytes.bytes(of: text) == nil)
        #expect(UUIDBytes.canonical(text) == nil)
    }
}
