import FuzzSupport

@testable import AuthGateCore

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzStoredRecords_main")
public func fuzzStoredRecordsMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzStoredRecords(data, size) }
}

/// The records a gateway reads back from Redis (users, identities, sessions): a broken or hostile
/// Redis must not crash it. Any bytes either decode or throw `store_corrupt` (never a trap), and a
/// decoded record's stored form is a fixed point: encode -> decode -> encode gives the same bytes.
/// The first byte picks the record kind; the rest is the stored value.
public func fuzzStoredRecords(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let kind = input.byte() % 3
    let bytes = input.rest()
    func check<Record>(_ decode: ([UInt8]) throws -> Record, _ encode: (Record) -> [UInt8]) {
        guard let record = try? decode(bytes) else { return }
        let stored = encode(record)
        guard let again = try? decode(stored) else {
            fuzzCheck(false, "the stored form of a decoded record does not decode: \(String(decoding: stored, as: UTF8.self).debugDescription)")
            return
        }
        fuzzCheck(encode(again) == stored, "encode -> decode -> encode changed \(String(decoding: stored, as: UTF8.self).debugDescription)")
    }
    switch kind {
    case 0: check(StoredRecordCoding.decodeUser, StoredRecordCoding.encode)
    case 1: check(StoredRecordCoding.decodeIdentity, StoredRecordCoding.encode)
    default: check(StoredRecordCoding.decodeSession, StoredRecordCoding.encode)
    }
    return 0
}
