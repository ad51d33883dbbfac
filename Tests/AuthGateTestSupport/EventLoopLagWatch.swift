import Foundation
import NIOCore
import NIOPosix

/// Writes a line on standard error whenever a loop of NIO's shared group runs a task more than
/// half a second after it was due, and whenever a plain thread of this process wakes that late,
/// so a failing run says which of them stalled. Redis commands that all time out at once on the
/// shared server look the same from a test whether the server stalled (`scripts/with-redis.sh`
/// prints its slow log), a loop of this process was blocked (its timers fire late, and a command
/// written late meets its deadline at once), or the whole machine paused (both lines then appear
/// together). Both of the first were found so: a script of 101,000 writes on the shared server, and
/// 20,000 one-byte request chunks proxied one by one on a shared loop (1-1.7 s in a debug build).
/// Started once, with the first use of the shared Redis server; one scheduled task per 100 ms.
enum EventLoopLagWatch {
    static let started: Void = {
        for (index, loop) in MultiThreadedEventLoopGroup.singleton.makeIterator().enumerated() { watch(loop, index: index) }
        let thread = Thread {
            while true {
                let due = DispatchTime.now().uptimeNanoseconds + 100_000_000
                Thread.sleep(forTimeInterval: 0.1)
                report("a thread of the test process", lateBy: DispatchTime.now().uptimeNanoseconds &- due)
            }
        }
        thread.name = "event-loop-lag-watch"
        thread.start()
    }()

    private static func watch(_ loop: any EventLoop, index: Int) {
        let due = NIODeadline.now() + .milliseconds(100)
        loop.scheduleTask(deadline: due) {
            report("event loop \(index) of the shared group", lateBy: UInt64(max(0, (NIODeadline.now() - due).nanoseconds)))
            watch(loop, index: index)
        }
    }

    private static func report(_ what: String, lateBy nanoseconds: UInt64) {
        guard nanoseconds > 500_000_000, nanoseconds < UInt64(Int64.max) else { return }
        let line = "\(Date()) event-loop-lag-watch: \(what) ran \(nanoseconds / 1_000_000) ms late\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
