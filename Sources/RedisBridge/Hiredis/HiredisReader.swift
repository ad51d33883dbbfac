import CHiredis
import NIOCore

/// hiredis's RESP parser, owned by one connection and used only on that connection's event loop.
///
/// This is the only type that touches C pointers: bytes go in with ``feed(_:)``, complete replies
/// come out of ``nextReply()`` already copied into ``RESPValue``, and the hiredis reply tree is
/// freed before the call returns. The reader allocates and frees its `redisReader` itself.
///
/// hiredis has no limit on how large a reply may grow, so the reader counts the bytes fed since
/// the last complete reply and fails with ``RedisError/Code/replyTooLarge`` past `maxReplyBytes`;
/// an array announcing more than 1,048,576 elements is a protocol error before anything is
/// allocated for it.
///
/// hiredis gets the bytes in pieces of at most ``feedPieceBytes``, each when the replies before it
/// are out: after every reply, once it has consumed 1 KiB, hiredis moves everything it holds behind
/// that reply to the front of its buffer. Fed a whole read at once (64 replies of 2 KiB from a
/// pipelined batch), it would move most of that read again for each reply, quadratic in the read's
/// size; in pieces, each move is at most a piece and an incomplete reply.
final class HiredisReader {
    private let reader: UnsafeMutablePointer<redisReader>
    private let allocator: ByteBufferAllocator
    /// The cap on bytes buffered for one incomplete reply.
    let maxReplyBytes: Int
    /// Bytes fed to hiredis since the last complete reply: the size of the reply being assembled.
    private(set) var bytesBufferedForCurrentReply = 0
    /// Bytes read from the socket that hiredis has not been given yet (at most one read).
    private var unfed = ByteBuffer()

    /// The most bytes handed to hiredis at once.
    static let feedPieceBytes = 4096

    /// Bytes hiredis holds: those of replies not yet complete and of the piece it was last given.
    var bytesHeldByHiredis: Int { reader.pointee.len }

    /// Creates a reader.
    /// - Parameters:
    ///   - maxReplyBytes: the most bytes one reply may occupy before it completes.
    ///   - allocator: allocates the buffers that bulk strings are copied into.
    init(maxReplyBytes: Int, allocator: ByteBufferAllocator = ByteBufferAllocator()) throws {
        // With AuthGate's limit on aggregate sizes (shim.h): no reply header makes hiredis
        // allocate more than 8 MB of element table before the elements arrive.
        guard let reader = authgate_reader_create() else {
            throw RedisError(.protocolError, "hiredis could not allocate a reader")
        }
        self.reader = reader
        self.allocator = allocator
        self.maxReplyBytes = maxReplyBytes
    }

    deinit {
        authgate_reader_free(reader)
    }

    /// Takes bytes read from the socket; ``nextReply()`` hands them to hiredis piece by piece.
    func feed(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        if unfed.readableBytes == 0 {
            unfed = buffer
        } else {
            var buffer = buffer
            unfed.writeBuffer(&buffer)
        }
    }

    /// The next complete reply, or nil when more bytes are needed (every byte fed is then with
    /// hiredis).
    ///
    /// Throws ``RedisError/Code/protocolError`` when the bytes are not RESP (the reader is then
    /// unusable and the connection must close) and ``RedisError/Code/replyTooLarge`` when an
    /// incomplete reply is over the cap.
    func nextReply() throws -> RESPValue? {
        while true {
            var replyPointer: UnsafeMutableRawPointer?
            guard redisReaderGetReply(reader, &replyPointer) == REDIS_OK else { throw protocolError() }
            if let replyPointer {
                defer { freeReplyObject(replyPointer) }
                // Whatever hiredis has not consumed yet belongs to the next reply.
                bytesBufferedForCurrentReply = Int(reader.pointee.len - reader.pointee.pos)
                return value(of: replyPointer.assumingMemoryBound(to: redisReply.self))
            }
            if bytesBufferedForCurrentReply > maxReplyBytes {
                throw RedisError(
                    .replyTooLarge,
                    "a reply grew past \(maxReplyBytes) bytes before it completed (\(bytesBufferedForCurrentReply) buffered)"
                )
            }
            guard try feedPiece() else { return nil }
        }
    }

    /// Hands hiredis (which copies them into its own buffer) the next piece of the unfed bytes;
    /// false when there are none.
    private func feedPiece() throws -> Bool {
        let count = min(unfed.readableBytes, Self.feedPieceBytes)
        guard count > 0, let piece = unfed.readSlice(length: count) else { return false }
        // Drained: the read's buffer is not kept until the next read.
        if unfed.readableBytes == 0 { unfed = ByteBuffer() }
        let status = piece.withUnsafeReadableBytes { bytes in
            redisReaderFeed(reader, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
        }
        guard status == REDIS_OK else { throw protocolError() }
        bytesBufferedForCurrentReply += count
        return true
    }

    /// The reply as a ``RESPValue``. Its bulk strings are copied into one buffer and handed out
    /// as slices of it: one allocation per reply rather than two per string (an account read
    /// answers five). A slice kept keeps that buffer (the size of the reply's strings) alive;
    /// whatever keeps bytes for long copies them (the record caches do).
    private func value(of reply: UnsafeMutablePointer<redisReply>) -> RESPValue {
        // The sum is only a capacity hint (the buffer grows if it is short), capped by the
        // reply-size limit every reply was held to.
        var strings = allocator.buffer(capacity: min(Self.bulkStringBytes(reply, upTo: maxReplyBytes), maxReplyBytes))
        Self.copyBulkStrings(reply, into: &strings)
        // Written whole before any slice is taken: a write after a slice would copy the buffer.
        return Self.value(of: reply, slicing: &strings)
    }

    /// The bytes of a reply's bulk strings, depth first; not past `limit`.
    private static func bulkStringBytes(_ reply: UnsafeMutablePointer<redisReply>, upTo limit: Int) -> Int {
        let node = reply.pointee
        switch node.type {
        case REDIS_REPLY_STRING:
            return node.str == nil ? 0 : min(node.len, limit)
        case REDIS_REPLY_ARRAY:
            guard let elements = node.element else { return 0 }
            var total = 0
            for index in 0..<node.elements where total < limit {
                if let element = elements[index] { total += min(bulkStringBytes(element, upTo: limit), limit - total) }
            }
            return total
        default:
            return 0
        }
    }

    /// Writes a reply's bulk strings into `buffer`, depth first (the order ``value(of:slicing:)`` reads them).
    private static func copyBulkStrings(_ reply: UnsafeMutablePointer<redisReply>, into buffer: inout ByteBuffer) {
        let node = reply.pointee
        switch node.type {
        case REDIS_REPLY_STRING:
            guard let pointer = node.str, node.len > 0 else { return }
            buffer.writeBytes(UnsafeRawBufferPointer(start: pointer, count: node.len))
        case REDIS_REPLY_ARRAY:
            guard let elements = node.element else { return }
            for index in 0..<node.elements {
                if let element = elements[index] { copyBulkStrings(element, into: &buffer) }
            }
        default:
            return
        }
    }

    /// The value of a reply whose bulk strings are in `strings`, in order: each is a slice of it.
    private static func value(of reply: UnsafeMutablePointer<redisReply>, slicing strings: inout ByteBuffer) -> RESPValue {
        let node = reply.pointee
        switch node.type {
        case REDIS_REPLY_STRING:
            let length = node.str == nil ? 0 : node.len
            return .bulkString(strings.readSlice(length: length) ?? ByteBuffer())
        case REDIS_REPLY_STATUS:
            return .simpleString(text(node.str, node.len))
        case REDIS_REPLY_ERROR:
            return .error(text(node.str, node.len))
        case REDIS_REPLY_INTEGER:
            return .integer(Int64(node.integer))
        case REDIS_REPLY_ARRAY:
            guard let elements = node.element else { return .array([]) }
            var values: [RESPValue] = []
            values.reserveCapacity(node.elements)
            for index in 0..<node.elements {
                if let element = elements[index] {
                    values.append(value(of: element, slicing: &strings))
                } else {
                    values.append(.null)
                }
            }
            return .array(values)
        default:
            return .null
        }
    }

    /// A status or error line as text (invalid UTF-8 repaired).
    private static func text(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> String {
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    private func protocolError() -> RedisError {
        let text = withUnsafeBytes(of: reader.pointee.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return RedisError(.protocolError, text.isEmpty ? "invalid RESP from server" : text)
    }
}

@available(*, unavailable)
extension HiredisReader: Sendable {}
