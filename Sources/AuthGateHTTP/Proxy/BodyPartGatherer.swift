import NIOCore

/// Gathers the small body parts a proxied message arrives in into fewer, larger ones, in either
/// direction: a client's request body on its way upstream, an upstream's response on its way to
/// the client.
///
/// A peer's 1-byte chunks (5 bytes on the wire each) would otherwise each cost a pass through the
/// other side's pipeline and three writes of NIO's chunked encoder (or an HTTP/2 DATA frame): 20,000
/// of them held an event loop for a second and a half (debug build), and the other side received
/// 20,000 chunks. Parts smaller than ``limit`` are gathered until they make that many bytes (less
/// than twice as many); larger ones go as they come, after what was gathered. The owner writes
/// what is left at the end of the peer's read (``drain()``) and before the message's end, so
/// that nothing waits for more bytes: a streamed event reaches the other side as promptly as
/// before. The bytes and their order are the peer's; only the chunk boundaries differ, as HTTP
/// allows.
struct BodyPartGatherer {
    /// Parts smaller than this are gathered; a gathered part is written once it holds this many.
    static let limit = 8192

    /// The small parts gathered so far, not written yet.
    private var gathered: ByteBuffer?
    /// `gathered` is a buffer of this gatherer's own, not a part as it came (which shares its
    /// storage with the peer's read buffer), so parts can be appended to it.
    private var gatheredIsOwn = false

    /// Bytes held, not written yet.
    var heldBytes: Int { gathered?.readableBytes ?? 0 }

    /// Takes `part` and returns what is to be written now, in order: a gathered part (what was
    /// held before a large part, or a gathered part that reached ``limit``), then `part` itself
    /// when it is large. (Returned, not written through a callback: a write made inside this
    /// mutation would make every exclusivity check of the pipeline beneath it dearer.)
    ///
    /// A part alone is held as it came: a small response in one part is not copied. An empty part
    /// is dropped: it carries nothing, and an empty chunk would end a chunked body.
    /// `allocator` is asked only when a buffer is made (a channel's allocator is not free to get).
    mutating func take(_ part: ByteBuffer, allocator: @autoclosure () -> ByteBufferAllocator) -> (gathered: ByteBuffer?, large: ByteBuffer?) {
        guard part.readableBytes > 0 else { return (nil, nil) }
        guard part.readableBytes < Self.limit else { return (drain(), part) }
        guard var buffer = gathered else {
            gathered = part
            gatheredIsOwn = false
            return (nil, nil)
        }
        // Taken out of the optional, so that appending does not copy it.
        gathered = nil
        if !gatheredIsOwn {
            var own = allocator().buffer(capacity: Self.limit)
            own.writeImmutableBuffer(buffer)
            buffer = own
        }
        buffer.writeImmutableBuffer(part)
        guard buffer.readableBytes < Self.limit else { return (buffer, nil) }
        gathered = buffer
        gatheredIsOwn = true
        return (nil, nil)
    }

    /// What is gathered, if anything, to be written now.
    mutating func drain() -> ByteBuffer? {
        defer { gathered = nil }
        return gathered
    }

    /// Drops what is gathered: the message will not be completed.
    mutating func discard() {
        gathered = nil
    }
}
