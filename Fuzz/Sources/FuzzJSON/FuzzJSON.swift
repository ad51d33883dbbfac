import AuthGateCore
import FuzzSupport

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzJSON_main")
public func fuzzJSONMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzJSON(data, size) }
}

/// The JSON reader every claim set and request body goes through: any bytes either parse or
/// throw `ParseError` (never a trap), and whatever parses survives parse -> serialize -> parse
/// unchanged, with a serialization that is its own fixed point.
public func fuzzJSON(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let bytes = input.rest()
    guard let value = try? JSONValue.parse(bytes) else { return 0 }
    let text = value.serialized()
    let again: JSONValue
    do {
        again = try JSONValue.parse(text)
    } catch {
        fuzzCheck(false, "the serialization of a parsed value does not parse: \(error) in \(String(decoding: text, as: UTF8.self).debugDescription)")
        return 0
    }
    fuzzCheck(again == value, "parse -> serialize -> parse changed the value: \(value) became \(again)")
    fuzzCheck(again.serialized() == text, "serialization is not a fixed point: \(String(decoding: text, as: UTF8.self).debugDescription)")
    return 0
}
