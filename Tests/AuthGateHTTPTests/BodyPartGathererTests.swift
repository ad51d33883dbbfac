import NIOCore
import Testing

@testable import AuthGateHTTP

/// ``BodyPartGatherer`` alone: what it writes for any sequence of parts and drains.
@Suite("Body part gatherer")
struct BodyPartGathererTests {
    private let limit = BodyPartGatherer.limit

    @Test("any parts and drains: every byte written once, in order; small parts written at the limit or before a large part")
    func randomSequences() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var gatherer = BodyPartGatherer()
            var taken: [UInt8] = []
            var written: [UInt8] = []
            var writes: [(size: Int, drained: Bool)] = []
            func write(_ buffer: ByteBuffer?, drained: Bool) {
                guard let buffer else { return }
                written += buffer.readableBytesView
                writes.append((buffer.readableBytes, drained))
            }
            for step in 0..<Int.random(in: 1...60, using: &generator) {
                if Int.random(in: 0..<8, using: &generator) == 0 {
                    write(gatherer.drain(), drained: true)
                    #expect(gatherer.heldBytes == 0)
                    continue
                }
                let size =
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: Int.random(in: 0...2, using: &generator)
                    case 1: Int.random(in: 1...limit - 1, using: &generator)
                    case 2: limit
                    default: Int.random(in: limit...3 * limit, using: &generator)
                    }
                // Each step's bytes differ from its neighbours', so that an order mix-up shows.
                let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: step), count: size)
                taken += bytes
                let (gathered, large) = gatherer.take(ByteBuffer(bytes: bytes), allocator: ByteBufferAllocator())
                write(gathered, drained: false)
                write(large, drained: false)
                #expect(gatherer.heldBytes < limit, "a gathered part is written once it holds the limit")
                #expect(written.count + gatherer.heldBytes == taken.count)
            }
            write(gatherer.drain(), drained: true)
            #expect(written == taken, "every byte once, in order")
            #expect(!writes.contains { $0.size == 0 }, "an empty part is never written")
            for (index, write) in writes.enumerated() where !write.drained {
                guard write.size < limit else { continue }
                // Written while taking but under the limit: only what was gathered before a large
                // part, which comes next.
                let next = writes.indices.contains(index + 1) ? writes[index + 1] : nil
                #expect(next.map { !$0.drained && $0.size >= limit } == true, "a small write is followed by a large part")
            }
        }
    }

    @Test("parts under the limit are held; the one that reaches it writes them as one; a large part writes what is held first")
    func gathersSmallParts() {
        var gatherer = BodyPartGatherer()
        var writes: [[UInt8]] = []
        func record(_ buffer: ByteBuffer?) {
            if let buffer { writes.append(Array(buffer.readableBytesView)) }
        }
        func take(_ part: ByteBuffer) {
            let (gathered, large) = gatherer.take(part, allocator: ByteBufferAllocator())
            record(gathered)
            record(large)
        }
        func take(_ bytes: [UInt8]) { take(ByteBuffer(bytes: bytes)) }
        take([1])
        take([2, 3])
        #expect(writes.isEmpty)
        #expect(gatherer.heldBytes == 3)
        take(Array(repeating: 4, count: limit - 3))
        #expect(writes == [[1, 2, 3] + Array(repeating: 4, count: limit - 3)])
        take([5])
        take(Array(repeating: 6, count: limit))
        #expect(writes.count == 3)
        #expect(writes.suffix(2) == [[5], Array(repeating: 6, count: limit)])
        // A part alone is held as it came (no copy), a slice of its read buffer; the next one is
        // gathered with it.
        var first = ByteBuffer(bytes: [8, 9])
        first.moveReaderIndex(forwardBy: 1)
        take(first)
        take([10])
        record(gatherer.drain())
        #expect(writes.last == [9, 10])
        take([7])
        gatherer.discard()
        #expect(gatherer.heldBytes == 0)
        record(gatherer.drain())
        #expect(writes.count == 4, "a discarded part is never written")
    }
}
