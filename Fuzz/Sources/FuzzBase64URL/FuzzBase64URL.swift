import AuthGateCore
import FuzzSupport

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzBase64URL_main")
public func fuzzBase64URLMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzBase64URL(data, size) }
}

/// Base64url (RFC 7515): any text decodes only when it is the one canonical spelling of its bytes
/// (so `encode(decode(t)) == t`), and any bytes round-trip (`decode(encode(b)) == b`).
public func fuzzBase64URL(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let bytes = input.rest()
    let encoded = Base64URL.encode(bytes)
    fuzzCheck(Base64URL.decode(encoded) == bytes, "decode(encode(x)) != x for \(bytes)")
    fuzzCheck(encoded.utf8.allSatisfy(isURLSafe), "encode produced a byte outside the URL-safe alphabet: \(encoded)")
    let text = String(decoding: bytes, as: UTF8.self)
    if let decoded = Base64URL.decode(text) {
        fuzzCheck(Base64URL.encode(decoded) == text, "a non-canonical spelling was accepted: \(text.debugDescription)")
    }
    return 0
}

/// The RFC 4648 §5 alphabet: letters, digits, `-` and `_`.
private func isURLSafe(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
        UInt8(ascii: "_"):
        return true
    default:
        return false
    }
}
