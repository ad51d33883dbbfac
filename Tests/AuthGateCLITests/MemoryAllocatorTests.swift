import AuthGateCLI
import Testing

/// jemalloc replaces libc's allocator in every binary that links AuthGateCLI: `authgate` and this
/// test process (ServeCommandTests checks the executable's start line).
@Suite("Memory allocator")
struct MemoryAllocatorTests {
    @Test("jemalloc serves malloc in this process: a block Swift allocates shows in its statistics")
    func jemallocServesMalloc() throws {
        let version = try #require(MemoryAllocator.version)
        #expect(version.hasPrefix("5."), "\(version)")
        #expect(MemoryAllocator.servesMalloc())
    }
}
