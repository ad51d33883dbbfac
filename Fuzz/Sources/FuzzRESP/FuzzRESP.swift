import FuzzSupport
import NIOCore

@testable import RedisBridge

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzRESP_main")
public func fuzzRESPMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzRESP(data, size) }
}

/// Redis replies as the gateway reads them: bytes fed through hiredis in chunks (the first byte
/// picks the chunk size, as TCP would split them) and turned into ``RESPValue``. A broken or
/// hostile Redis must get an error, never a trap. Properties: the reader either yields replies,
/// waits for more, or throws; once it throws the caller drops the connection; every reply's
/// accessors are total.
public func fuzzRESP(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let chunkSize = Int(input.byte() % 64) + 1
    let bytes = input.rest()
    guard let reader = try? HiredisReader(maxReplyBytes: 64 * 1024) else {
        fuzzCheck(false, "hiredis could not allocate a reader")
        return 0
    }
    var offset = 0
    read: while offset < bytes.count {
        let end = min(offset + chunkSize, bytes.count)
        var buffer = ByteBufferAllocator().buffer(capacity: end - offset)
        buffer.writeBytes(bytes[offset..<end])
        offset = end
        do {
            reader.feed(buffer)
            while let reply = try reader.nextReply() {
                touch(reply, depth: 0)
            }
        } catch {
            break read
        }
    }
    return 0
}

/// Reads every accessor of `reply` and its elements, as the store's decoders do.
private func touch(_ reply: RESPValue, depth: Int) {
    fuzzCheck(depth < 1000, "a reply nested deeper than hiredis allows")
    _ = reply.string
    _ = reply.int
    _ = reply.description
    _ = reply.isNull
    for element in reply.array ?? [] {
        touch(element, depth: depth + 1)
    }
}
