import Dispatch
import NIOCore
import Synchronization
import Testing

@testable import RedisBridge

@Suite("RESP encoding and the hiredis reader", .timeLimit(.minutes(3)))
struct RESPTests {
    @Test("commands encode as RESP arrays of bulk strings")
    func encoding() {
        let command = RedisCommand("SET", "key", .bytes(ByteBuffer(string: "välue")), "PX", 1500)
        #expect(String(buffer: command.encoded()) == "*5\r\n$3\r\nSET\r\n$3\r\nkey\r\n$6\r\nvälue\r\n$2\r\nPX\r\n$4\r\n1500\r\n")
        let binary = RedisCommand("SET", "k", .byteArray([0, 13, 10, 255]))
        #expect(Array(buffer: binary.encoded()) == Array("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\n".utf8) + [0, 13, 10, 255, 13, 10])
        for value: Int64 in [0, 7, 9, 10, 99, 100, -1, -10, 1_790_000_000_123, .max, .min] {
            let text = String(value)
            #expect(String(buffer: RedisCommand("X", .integer(value)).encoded()) == "*2\r\n$1\r\nX\r\n$\(text.utf8.count)\r\n\(text)\r\n")
        }
    }

    @Test("random commands encode as a reference encoder writes them, appended after what a buffer holds")
    func encodingMatchesAReference() {
        var generator = SystemRandomNumberGenerator()
        func reference(_ arguments: [RedisArgument]) -> [UInt8] {
            var bytes = Array("*\(arguments.count)\r\n".utf8)
            for argument in arguments {
                let payload: [UInt8]
                switch argument {
                case .string(let text): payload = Array(text.utf8)
                case .bytes(let buffer): payload = Array(buffer.readableBytesView)
                case .byteArray(let array): payload = array
                case .integer(let value): payload = Array(String(value).utf8)
                }
                bytes += Array("$\(payload.count)\r\n".utf8) + payload + [13, 10]
            }
            return bytes
        }
        for _ in 0..<1000 {
            var arguments: [RedisArgument] = [.string("EVALSHA")]
            for _ in 0..<Int.random(in: 0...24, using: &generator) {
                let length = [0, 1, 9, 10, 99, 100, 1000].randomElement(using: &generator)!
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                switch Int.random(in: 0...3, using: &generator) {
                case 0: arguments.append(.string(String(repeating: "é", count: length / 2)))
                case 1:
                    var buffer = ByteBuffer(bytes: [1, 2, 3] + bytes)
                    buffer.moveReaderIndex(forwardBy: 3)
                    arguments.append(.bytes(buffer))
                case 2: arguments.append(.byteArray(bytes))
                default: arguments.append(.integer(Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...63, using: &generator)))
                }
            }
            let command = RedisCommand(nameAndArguments: arguments)
            var buffer = ByteBuffer(bytes: [7, 7])
            buffer.moveReaderIndex(forwardBy: 1)
            command.encode(into: &buffer)
            #expect(Array(buffer.readableBytesView) == [7] + reference(arguments))
            #expect(Array(buffer: command.encoded()) == reference(arguments))
        }
    }

    @Test("every RESP2 reply type is copied into RESPValue")
    func replyTypes() throws {
        let reader = try HiredisReader(maxReplyBytes: 1024)
        reader.feed(ByteBuffer(string: "+OK\r\n-ERR bad\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n$0\r\n\r\n"))
        #expect(try reader.nextReply() == .simpleString("OK"))
        #expect(try reader.nextReply() == .error("ERR bad"))
        #expect(try reader.nextReply() == .integer(42))
        #expect(try reader.nextReply() == .bulkString(ByteBuffer(string: "abc")))
        #expect(try reader.nextReply() == .null)
        #expect(try reader.nextReply() == .null)
        #expect(try reader.nextReply() == .bulkString(ByteBuffer()))
        #expect(try reader.nextReply() == nil)
    }

    @Test("a read of many replies reaches hiredis in pieces: it never holds more than a piece and the reply being read")
    func readOfManyReplies() throws {
        // 2,000 replies of 2 KiB in one read: hiredis, fed it whole, would hold the whole read
        // and move what follows each reply to the front of its buffer after every reply.
        let reader = try HiredisReader(maxReplyBytes: 1 << 24)
        let payload = String(repeating: "u", count: 2048)
        let reply = "$2048\r\n\(payload)\r\n"
        reader.feed(ByteBuffer(string: String(repeating: reply, count: 2000)))
        var count = 0
        while let value = try reader.nextReply() {
            #expect(value == .bulkString(ByteBuffer(string: payload)))
            // A piece (4 KiB) and the reply being read; the read is 4 MB.
            #expect(reader.bytesHeldByHiredis <= 16_384, "after reply \(count)")
            count += 1
        }
        #expect(count == 2000)
        // A reply larger than a piece is assembled from several.
        let large = String(repeating: "v", count: 100_000)
        reader.feed(ByteBuffer(string: "$100000\r\n\(large)\r\n:7\r\n"))
        #expect(try reader.nextReply() == .bulkString(ByteBuffer(string: large)))
        #expect(try reader.nextReply() == .integer(7))
        #expect(try reader.nextReply() == nil)
    }

    @Test("binary bulk strings keep every byte, including NUL and CRLF")
    func binarySafe() throws {
        let reader = try HiredisReader(maxReplyBytes: 1024)
        var input = ByteBuffer(string: "$6\r\n")
        input.writeBytes([0, 13, 10, 255, 1, 0])
        input.writeString("\r\n")
        reader.feed(input)
        #expect(try reader.nextReply() == .bulkString(ByteBuffer(bytes: [0, 13, 10, 255, 1, 0])))
    }

    @Test("a reply split across many reads is assembled")
    func splitReply() throws {
        let reader = try HiredisReader(maxReplyBytes: 1024)
        let text = "*3\r\n$5\r\nhello\r\n:7\r\n*2\r\n+a\r\n$1\r\nb\r\n"
        for byte in text.utf8.dropLast() {
            reader.feed(ByteBuffer(bytes: [byte]))
            #expect(try reader.nextReply() == nil)
        }
        reader.feed(ByteBuffer(string: "\n"))
        let expected = RESPValue.array([
            .bulkString(ByteBuffer(string: "hello")), .integer(7), .array([.simpleString("a"), .bulkString(ByteBuffer(string: "b"))])
        ])
        #expect(try reader.nextReply() == expected)
    }

    @Test("an array header announcing more than 1,048,576 elements is a protocol error, not an 8 GB allocation (FuzzRESP)")
    func hugeArrayHeader() throws {
        for header in ["*999999992\r\n", "*1048577\r\n", "*1\r\n*999999992\r\n"] {
            let reader = try HiredisReader(maxReplyBytes: 1024)
            reader.feed(ByteBuffer(string: header))
            #expect(throws: RedisError.self, "\(header)") { try reader.nextReply() }
        }
        let reader = try HiredisReader(maxReplyBytes: 1 << 24)
        reader.feed(ByteBuffer(string: "*1048576\r\n"))
        #expect(try reader.nextReply() == nil, "the limit itself is allowed (it waits for the elements)")
    }

    @Test("readers made at once on many threads each keep hiredis's functions and the limit (no state shared between readers)")
    func concurrentReaders() {
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            do {
                let reader = try HiredisReader(maxReplyBytes: 1024)
                reader.feed(ByteBuffer(string: "*2\r\n:\(index)\r\n*1\r\n$1\r\nx\r\n"))
                guard try reader.nextReply() == .array([.integer(Int64(index)), .array([.bulkString(ByteBuffer(string: "x"))])]) else {
                    failures.withLock { $0 += 1 }
                    return
                }
                reader.feed(ByteBuffer(string: "*1048577\r\n"))
                if (try? reader.nextReply()) != nil { failures.withLock { $0 += 1 } }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }

    @Test("nested arrays keep their shape")
    func nestedArrays() throws {
        let reader = try HiredisReader(maxReplyBytes: 1024)
        reader.feed(ByteBuffer(string: "*2\r\n*2\r\n*1\r\n:1\r\n*0\r\n$-1\r\n"))
        #expect(try reader.nextReply() == .array([.array([.array([.integer(1)]), .array([])]), .null]))
    }

    @Test("a reply's bulk strings are slices of one buffer, in order, and each is its own value")
    func bulkStringsShareOneBuffer() throws {
        let reader = try HiredisReader(maxReplyBytes: 1024)
        reader.feed(ByteBuffer(string: "*5\r\n$3\r\nabc\r\n$0\r\n\r\n*3\r\n$2\r\nde\r\n+OK\r\n$-1\r\n:5\r\n$4\r\nfghi\r\n"))
        let reply = try #require(try reader.nextReply())
        #expect(
            reply
                == .array([
                    .bulkString(ByteBuffer(string: "abc")), .bulkString(ByteBuffer()),
                    .array([.bulkString(ByteBuffer(string: "de")), .simpleString("OK"), .null]), .integer(5),
                    .bulkString(ByteBuffer(string: "fghi"))
                ]))
        guard case .array(let top) = reply, case .bulkString(let abc) = top[0], case .array(let inner) = top[2],
            case .bulkString(var de) = inner[0], case .bulkString(let fghi) = top[4]
        else {
            Issue.record("unexpected shape: \(reply)")
            return
        }
        // One allocation for the reply's strings: each starts where the one before it ended.
        func start(_ buffer: ByteBuffer) -> UInt? { buffer.withUnsafeReadableBytes { $0.baseAddress.map { UInt(bitPattern: $0) } } }
        #expect(start(de) == start(abc).map { $0 + 3 })
        #expect(start(fghi) == start(abc).map { $0 + 5 })
        // Changing one value leaves the others (and the shared bytes) as they were.
        de.setString("XY", at: de.readerIndex)
        #expect(String(buffer: de) == "XY")
        #expect(String(buffer: abc) == "abc")
        #expect(String(buffer: fghi) == "fghi")
    }

    @Test("bytes that are not RESP are a protocol error")
    func protocolError() throws {
        let reader = try HiredisReader(maxReplyBytes: 1024)
        reader.feed(ByteBuffer(string: "?what\r\n"))
        #expect(throws: RedisError.self) { try reader.nextReply() }
        do {
            _ = try reader.nextReply()
        } catch let error as RedisError {
            #expect(error.code == .protocolError)
        }
    }

    @Test("a reply growing past the cap fails, while many small replies in one read do not")
    func replyCap() throws {
        let small = try HiredisReader(maxReplyBytes: 64)
        // 40 complete replies (200 bytes) in one read: each reply is under the cap.
        small.feed(ByteBuffer(string: String(repeating: ":1234\r\n", count: 40)))
        var count = 0
        while try small.nextReply() != nil { count += 1 }
        #expect(count == 40)

        let reader = try HiredisReader(maxReplyBytes: 64)
        reader.feed(ByteBuffer(string: "$1000\r\n" + String(repeating: "x", count: 50)))
        #expect(try reader.nextReply() == nil)
        reader.feed(ByteBuffer(string: String(repeating: "x", count: 50)))
        #expect {
            try reader.nextReply()
        } throws: { error in
            (error as? RedisError)?.code == .replyTooLarge
        }
    }
}
