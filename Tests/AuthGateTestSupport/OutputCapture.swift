public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A connected pair of UNIX stream sockets (what journald hands a service as its standard error)
/// whose reading the test controls: nothing reads it until ``readToEnd()``, so a writer (a child's
/// standard error, a log writer) meets a full buffer as it would a stalled log reader.
///
/// Both ends are made close-on-exec atomically (`SOCK_CLOEXEC`): a child another test spawns at
/// the same moment cannot inherit the write end and hold the reader's end of file back.
public final class OutputCapture: Sendable {
    /// The write end, close-on-exec (a child gets it only where it is handed over, as fd 2).
    public let writeDescriptor: Int32
    private let readDescriptor: Int32
    private let writeEndOpen = Mutex(true)

    public init() throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw TestSupportError("socketpair() failed: errno \(errno)")
        }
        readDescriptor = ends[0]
        writeDescriptor = ends[1]
    }

    /// The write end as a handle for `Process.standardError` (closing stays ``closeWriteEnd()``'s).
    public var writeHandle: FileHandle { FileHandle(fileDescriptor: writeDescriptor, closeOnDealloc: false) }

    /// Closes this process's write end (after handing it to a child, which keeps its own copy):
    /// ``readToEnd()`` ends once every copy is closed.
    public func closeWriteEnd() {
        let open = writeEndOpen.withLock { open in
            defer { open = false }
            return open
        }
        if open { close(writeDescriptor) }
    }

    /// Reads, on a thread of its own, until every write end is closed; then closes the read end.
    public func readToEnd() async -> [UInt8] {
        let collected = await read { _ in false }
        close(readDescriptor)
        return collected
    }

    /// Reads, on a thread of its own, until what was read ends with `suffix` (or every write end
    /// is closed); the read end stays open.
    public func read(untilSuffix suffix: [UInt8]) async -> [UInt8] {
        await read { $0.count >= suffix.count && Array($0.suffix(suffix.count)) == suffix }
    }

    private func read(until done: @escaping @Sendable ([UInt8]) -> Bool) async -> [UInt8] {
        let descriptor = readDescriptor
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var collected: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 64 << 10)
                while !done(collected) {
                    let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                    if count > 0 {
                        collected.append(contentsOf: chunk[0..<count])
                    } else if count < 0, errno == EINTR {
                        continue
                    } else {
                        break
                    }
                }
                continuation.resume(returning: collected)
            }
        }
    }

    deinit { closeWriteEnd() }
}
