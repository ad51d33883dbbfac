import AuthGateTestSupport
import Foundation
import Logging
import Testing

@testable import AuthGateCore

/// The log writer's thread against a real socket (as journald's standard error is): every line whole and in order, nothing blocks the
/// loggers when the reader stalls, and `close()` writes what is queued.
@Suite("Log line writer", .timeLimit(.minutes(1)))
struct LogLineWriterTests {
    /// `producer-sequence` padded to `width` bytes, newline included.
    private static func line(producer: Int, sequence: Int, width: Int = 100) -> [UInt8] {
        let text = "\(producer)-\(sequence)"
        return Array((text + String(repeating: ".", count: max(0, width - 1 - text.count)) + "\n").utf8)
    }

    /// The lines read, each as (producer, sequence); fails on a torn line.
    private static func parse(_ bytes: [UInt8]) -> [(Int, Int)] {
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.isEmpty || text.hasSuffix("\n"), "the output ends inside a line")
        return text.split(separator: "\n").compactMap { line in
            let head = line.prefix { $0 != "." }.split(separator: "-")
            guard line.utf8.count == 99, head.count == 2, let producer = Int(head[0]), let sequence = Int(head[1]) else {
                Issue.record("torn or foreign line: \(line.prefix(120))")
                return nil
            }
            return (producer, sequence)
        }
    }

    @Test("lines from four loggers at once arrive whole, each logger's in order; close returns once all are written; later lines go straight out")
    func concurrentLoggers() async throws {
        let capture = try OutputCapture()
        let output = Task { await capture.readToEnd() }
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 64 << 20)
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<4 {
                group.addTask {
                    for sequence in 0..<5000 { writer.write(Self.line(producer: producer, sequence: sequence)) }
                }
            }
        }
        #expect(writer.close(), "everything written before close returned")
        writer.write(Self.line(producer: 9, sequence: 0))
        capture.closeWriteEnd()
        let lines = Self.parse(await output.value)
        #expect(lines.count == 20_001)
        for producer in 0..<4 {
            #expect(lines.filter { $0.0 == producer }.map(\.1) == Array(0..<5000), "producer \(producer)'s lines out of order or missing")
        }
        #expect(lines.last.map { $0.0 == 9 } == true, "the line logged after close came last")
    }

    @Test("a stalled reader: loggers never wait; lines past the capacity are dropped whole; the rest arrive in order once the reader is back")
    func stalledReader() async throws {
        let capture = try OutputCapture()
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 64 << 10)
        // Nothing reads: the socket's buffers fill, then the writer's 64 KiB; 2 MB are offered.
        // Were a logger to wait for the reader, this loop would never end (the suite's time limit).
        for sequence in 0..<20_000 { writer.write(Self.line(producer: 0, sequence: sequence)) }
        let output = Task { await capture.readToEnd() }
        writer.close()
        capture.closeWriteEnd()
        let sequences = Self.parse(await output.value).map(\.1)
        #expect(sequences.count > 655, "the queue alone holds 655 lines; \(sequences.count) arrived")
        #expect(sequences.count < 20_000, "lines past the capacity are dropped")
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "out of order or repeated")
        #expect(sequences.first == 0, "the first lines are kept, the latest dropped")
    }

    @Test("close with a reader stalled for good gives up after its limit: a process never waits on its log reader to exit")
    func closeGivesUp() async throws {
        let capture = try OutputCapture()
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 4 << 20)
        // More than the socket's buffers hold: the writer's thread blocks in write(2).
        for sequence in 0..<20_000 { writer.write(Self.line(producer: 0, sequence: sequence), urgent: true) }
        #expect(writer.close(waitingAtMost: .milliseconds(200)) == false)
        // Lines logged now are queued for the blocked thread, never written by the caller.
        writer.write(Self.line(producer: 1, sequence: 0))
        // The reader is back: the thread finishes what it was given.
        let lines = Self.parse(await capture.read(untilSuffix: Self.line(producer: 1, sequence: 0)))
        #expect(lines.count == 20_001 && lines.last.map { $0.0 == 1 } == true)
        capture.closeWriteEnd()
    }

    @Test(
        "a thread that close gave up on writes on through its own descriptor: once the caller has closed its own and the number is reused, nothing reaches the new owner"
    )
    func abandonedThreadKeepsItsDescriptor() async throws {
        let capture = try OutputCapture()
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 4 << 20)
        // More than the socket's buffers hold: the writer's thread blocks in write(2).
        for sequence in 0..<20_000 { writer.write(Self.line(producer: 0, sequence: sequence), urgent: true) }
        #expect(writer.close(waitingAtMost: .milliseconds(200)) == false)
        // The caller is done with its descriptor, and a new socket takes the number.
        let number = capture.writeDescriptor
        capture.closeWriteEnd()
        var opened: [Int32] = []
        defer { for descriptor in opened { close(descriptor) } }
        var reusing: (taken: Int32, other: Int32)?
        for _ in 0..<64 where reusing == nil {
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { break }
            opened += ends
            if ends[0] == number { reusing = (ends[0], ends[1]) } else if ends[1] == number { reusing = (ends[1], ends[0]) }
        }
        let reused = try #require(reusing, "no new socket took descriptor \(number)")
        // The reader is back: the thread writes the rest of what it was given to the first socket.
        let lines = Self.parse(await capture.readToEnd())
        #expect(lines.count == 20_000, "every line reached the socket it was meant for")
        // Nothing reached the socket that took the number.
        _ = fcntl(reused.other, F_SETFL, O_NONBLOCK)
        var byte: UInt8 = 0
        let count = read(reused.other, &byte, 1)
        #expect(count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "log lines reached a socket that reused the closed descriptor")
    }

    @Test("an urgent line (a warning or worse) is written at once, with the lines gathered before it")
    func urgentLineFlushes() async throws {
        let capture = try OutputCapture()
        // A flush interval of an hour: only the urgent line can bring the info line out.
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 1 << 20, flushInterval: .seconds(3600))
        writer.write(Self.line(producer: 0, sequence: 0))
        writer.write(Self.line(producer: 0, sequence: 1), urgent: true)
        let arrived = Self.parse(await capture.read(untilSuffix: Self.line(producer: 0, sequence: 1)))
        #expect(arrived.map(\.1) == [0, 1])
        writer.write(Self.line(producer: 0, sequence: 2))
        writer.close()
        capture.closeWriteEnd()
        #expect(Self.parse(await capture.readToEnd()).map(\.1) == [2], "close writes what was gathered")
    }

    @Test("format text: a warning is written at once with the lines gathered before it, an info line waits; metadata reaches both")
    func textWarningsAreUrgent() async throws {
        let capture = try OutputCapture()
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 1 << 20, flushInterval: .seconds(3600))
        var logger = Logger(label: "text-test") { TextLogHandler(label: $0, level: .info, output: writer) }
        logger[metadataKey: "gw.request_id"] = "r-1"
        logger.debug("below the level")
        logger.info("first")
        logger.warning("second")
        let arrived = String(decoding: await capture.read(untilSuffix: Array(" second\n".utf8)), as: UTF8.self).split(separator: "\n")
        #expect(arrived.count == 2, "\(arrived)")
        #expect(arrived.first?.contains(" info text-test: ") == true && arrived.first?.hasSuffix(" first") == true, "\(arrived)")
        #expect(arrived.allSatisfy { $0.contains("gw.request_id=r-1") }, "\(arrived)")
        #expect(arrived.last?.contains(" warning text-test: ") == true, "\(arrived)")
        logger.info("third")
        writer.close()
        capture.closeWriteEnd()
        let rest = String(decoding: await capture.readToEnd(), as: UTF8.self)
        #expect(rest.hasSuffix(" third\n") && rest.split(separator: "\n").count == 1, "close writes the gathered info line: \(rest)")
    }

    @Test("the writer's thread is named, so that top -H and ps -L tell it from the event loops")
    func threadIsNamed() async throws {
        let capture = try OutputCapture()
        let writer = LogLineWriter(descriptor: capture.writeDescriptor, capacity: 1 << 20)
        let tasks = URL(fileURLWithPath: "/proc/self/task")
        try await waitUntil("a thread of this process is named \(LogLineWriter.threadName)", deadline: .seconds(10)) {
            try FileManager.default.contentsOfDirectory(atPath: tasks.path).contains { task in
                let comm = try? String(contentsOf: tasks.appendingPathComponent(task).appendingPathComponent("comm"), encoding: .utf8)
                return comm == LogLineWriter.threadName + "\n"
            }
        }
        writer.close()
        capture.closeWriteEnd()
    }

    @Test("a reader that went away: writes fail, nothing stops the process, close still returns")
    func closedReader() async throws {
        // The reading end is closed: a write raises SIGPIPE (ignored here, as by `authgate`) and
        // fails with EPIPE.
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        close(ends[0])
        let writer = LogLineWriter(descriptor: ends[1], capacity: 64 << 10)
        for sequence in 0..<1000 { writer.write(Self.line(producer: 0, sequence: sequence)) }
        writer.close()
        #expect(LogLineWriter.writeFully(ends[1], Self.line(producer: 0, sequence: 0)) == false)
        close(ends[1])
    }
}
