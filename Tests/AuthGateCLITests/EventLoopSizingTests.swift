import Testing

@testable import AuthGateCLI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

@Suite(.timeLimit(.minutes(3))) struct EventLoopSizingTests {
    @Test(arguments: [("0", 1), ("0-1", 2), ("0-3,8,10-11", 7), (" 2 ", 1), ("\t0-1", 2)])
    func cpuListsAreCounted(list: String, count: Int) {
        #expect(EventLoopSizing.cpuCount(list: list[...]) == count)
    }

    @Test(arguments: ["", "a", "3-1", "1-", "1-2-3", ","])
    func malformedListsAreRefused(list: String) {
        #expect(EventLoopSizing.cpuCount(list: list[...]) == nil)
    }

    @Test func thisProcessHasAnAffinityMask() throws {
        let count = try #require(EventLoopSizing.allowedCPUCount())
        #expect(count >= 1 && count <= ProcessInfo.processInfo.processorCount)
    }
}
