import Testing

@testable import AuthGateCore

@Suite("HTTP token: RFC 9110's tchar")
struct HTTPTokenTests {
    /// RFC 9110 §5.6.2, written out as the RFC lists it.
    private static let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

    @Test("every one of the 256 byte values is a tchar exactly when the RFC lists it")
    func everyByte() {
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(HTTPToken.isTokenCharacter(byte) == Self.tchar.contains(byte), "byte \(value)")
        }
    }

    @Test("a token is one or more tchar: empty, space, colon, CR, LF, NUL, DEL and bytes of 128 or more are not")
    func tokens() {
        for name in ["x", "content-type", "X-Request-ID", "!#$%&'*+-.^_`|~", "0"] { #expect(HTTPToken.isToken(name), "\(name)") }
        for name in ["", "x y", "x:", "x\r", "x\n", "x\0", "x\u{7F}", "é", "(x)", "x,y", "\"x\"", "x/y", "x@y", "x\t"] {
            #expect(!HTTPToken.isToken(name), "\(name.debugDescription)")
        }
        for bytes: [UInt8] in [[0x78, 0x80], [0xFF], [0x78, 0x79, 0x7A, 0xC3, 0xA9]] {
            #expect(!bytes.withUnsafeBufferPointer { HTTPToken.isToken($0) }, "\(bytes)")
        }
    }
}
