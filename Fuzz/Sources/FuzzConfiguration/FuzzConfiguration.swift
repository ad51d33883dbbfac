import AuthGateCore
import FuzzSupport

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzConfiguration_main")
public func fuzzConfigurationMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzConfiguration(data, size) }
}

/// The configuration reader: the first field is a YAML document, every further field an
/// environment override `NAME=value` (the `AUTHGATE_…` variables an operator sets).
/// Properties: never a trap, whatever the YAML, the numbers or the overrides (an invalid file is
/// a ``ConfigurationError`` naming the key); a configuration that is accepted renders
/// (`check-config` prints it) into YAML that reads back into the same rendering.
public func fuzzConfiguration(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let yaml = input.text()
    var environment: [String: String] = [:]
    while true {
        let field = input.field()
        if field.isEmpty { break }
        let text = String(decoding: field, as: UTF8.self)
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        environment[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
    }
    guard let configuration = try? AuthGateConfiguration.parse(yaml: yaml, baseDirectory: "/nonexistent", environment: environment) else { return 0 }
    let rendered = configuration.renderedYAML()
    do {
        let again = try AuthGateConfiguration.parse(yaml: rendered, baseDirectory: "/nonexistent", environment: [:])
        fuzzCheck(again.renderedYAML() == rendered, "the rendered configuration reads back differently:\n\(rendered)\n---\n\(again.renderedYAML())")
    } catch {
        fuzzCheck(false, "the rendered configuration does not read back: \(error)\n\(rendered)")
    }
    return 0
}
