import CJemalloc

/// The process's memory allocator: jemalloc, linked into `authgate` (and the test binary) ahead of
/// libc, as Redis and Envoy (tcmalloc) replace glibc's allocator too.
///
/// glibc's malloc keeps freed chunks of every size in shared bins that each allocation above its
/// small per-thread caches sorts through; with tens of thousands of cached records interleaved with
/// each request's short-lived buffers, that search grew to a fifth of a refresh's CPU time
/// (bench/exchange, 8,000 users: refresh 0.72 of the time with jemalloc, sign-ins 0.77-0.87,
/// `GET /user` 0.79). jemalloc's size classes keep short- and long-lived memory apart.
///
/// Tuned, when an operator wants to, through `MALLOC_CONF` (jemalloc(3)), e.g.
/// `MALLOC_CONF=background_thread:true,dirty_decay_ms:5000`.
package enum MemoryAllocator {
    /// jemalloc's version string, e.g. `5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c`.
    package static var version: String? {
        var pointer: UnsafePointer<CChar>? = nil
        var length = MemoryLayout<UnsafePointer<CChar>?>.size
        guard mallctl("version", &pointer, &length, nil, 0) == 0, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// Bytes jemalloc has handed to the calling thread since it started (`thread.allocated`): a
    /// count no other thread moves.
    private static var allocatedByThisThread: UInt64? {
        var allocated: UInt64 = 0
        var length = MemoryLayout<UInt64>.size
        guard mallctl("thread.allocated", &allocated, &length, nil, 0) == 0 else { return nil }
        return allocated
    }

    /// Whether jemalloc, not libc, serves `malloc` in this process: a block allocated through
    /// Swift's runtime (which calls `malloc`) must be counted by jemalloc for this thread. False
    /// when the link order let libc's allocator win, which loading the library alone does not
    /// prevent.
    package static func servesMalloc() -> Bool {
        let size = 1 << 20
        guard let before = allocatedByThisThread else { return false }
        let block = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { block.deallocate() }
        guard let after = allocatedByThisThread else { return false }
        return after &- before >= UInt64(size)
    }
}
