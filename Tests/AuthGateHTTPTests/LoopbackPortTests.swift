import AuthGateTestSupport
import Foundation
import Testing

/// The ports tests listen on: never ones the kernel may hand to another socket meanwhile.
@Suite("Loopback ports for tests")
struct LoopbackPortTests {
    @Test("freeLoopbackPort hands out distinct ports outside the kernel's ephemeral range, each free when handed out")
    func outsideEphemeralRange() throws {
        let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        let ephemeral = try #require(bounds.first)...(try #require(bounds.last))
        var seen = Set<Int>()
        for _ in 0..<200 {
            let port = try freeLoopbackPort()
            #expect(!ephemeral.contains(port), "\(port) is in the ephemeral range \(ephemeral): bind(0) or a client could take it")
            #expect(seen.insert(port).inserted, "\(port) handed out twice")
        }
    }

    /// A blocking connect to a listener that drops SYNs waits out the kernel's retransmissions
    /// (31 s to the fifth, about two minutes in all), and tests connect from Swift concurrency's
    /// threads: two on a two-core machine. A CI run once stalled every test for 30 s, twice.
    @Test("RawConnection gives up on a connect that hangs after 5 s rather than holding its thread for the kernel's retransmissions")
    func boundedConnect() throws {
        let hanging = try FullBacklogListener()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: TestSupportError.self) { _ = try RawConnection(port: hanging.port) }
        #expect(clock.now - start < .seconds(15), "gave up after \(clock.now - start)")
    }
}
