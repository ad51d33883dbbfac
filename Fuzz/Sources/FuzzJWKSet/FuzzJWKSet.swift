import Crypto
import FuzzSupport

@testable import AuthGateCore

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzJWKSet_main")
public func fuzzJWKSetMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzJWKSet(data, size) }
}

/// A provider's JWK set, as fetched: the first byte picks the configured algorithm, the rest is
/// the document. Properties: never a trap; every key is either kept or skipped with a reason;
/// a kept key's `kid` is in the document; a kept key verifies a junk signature as false.
public func fuzzJWKSet(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let algorithms = ProvidersConfiguration.VerificationAlgorithm.allCases
    let algorithm = algorithms[Int(input.byte()) % algorithms.count]
    let document = input.rest()
    guard let result = try? JWKSetParser.parse(document, algorithm: algorithm) else { return 0 }
    guard case .array(let entries) = (try? JSONValue.parse(document))?.objectValue?["keys"] else {
        fuzzCheck(false, "a document our JSON reader does not read as {\"keys\": [...]} was parsed as a key set")
        return 0
    }
    fuzzCheck(
        result.keys.count + result.skipped.count == entries.count,
        "\(entries.count) entries became \(result.keys.count) keys and \(result.skipped.count) skipped")
    let kids = Set(entries.compactMap { $0.objectValue?["kid"]?.stringValue })
    let digest = SHA256.hash(data: document)
    for (kid, key) in result.keys {
        fuzzCheck(kids.contains(kid), "kept a key under kid \(kid.debugDescription), which the document does not name")
        let junk = [UInt8](repeating: 7, count: 64)
        fuzzCheck(!key.isValidSignature(junk, for: document, sha256: digest), "a junk signature verified with key \(kid.debugDescription)")
    }
    return 0
}
