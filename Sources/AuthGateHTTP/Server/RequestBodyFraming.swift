/// How many of the bytes a client sends inside an HTTP/1.1 request body are not its data: chunk
/// size lines (zeros in front of a size included), chunk extensions, line ends and trailers.
///
/// NIO's decoder reads a chunk extension or a zero-padded size of any length and passes on only
/// the data, so a limit counted in data alone let a client send 200 MB for a 2-byte body, or keep
/// one request open for as long as it kept sending. As Go's net/http does since CVE-2023-39326,
/// framing may cost 16 bytes plus twice the data of each body part, beyond a first
/// ``allowance``; past that the rest of the connection is refused as unparsable.
///
/// ``ClientConnectionGuard`` counts the bytes as they are read, before they are decoded, and asks
/// before each read whether what was read so far was too much (so it knows at most one read
/// late: a read is at most 64 KiB); ``GatewayConnectionHandler`` reports the decoded parts.
/// The first read of a body (the one that held its head) is not counted: it may be mostly head.
struct RequestBodyFraming {
    /// Framing bytes every body may have beyond its share (Go's 16 KiB).
    static let allowance = 16 * 1024
    /// Framing bytes each decoded body part may add: its size line and line ends.
    static let perPart = 16

    /// A body is being read: from the decoder's head to its end.
    private(set) var open = false
    /// Bytes read from the client since the read that held the head.
    private(set) var wire = 0
    /// Data bytes decoded since the head.
    private(set) var data = 0
    /// Body parts decoded since the head.
    private(set) var parts = 0

    /// The decoder gave a request head: its body's bytes are counted from the next read on.
    mutating func headDecoded() {
        open = true
        wire = 0
        data = 0
        parts = 0
    }

    /// The decoder gave a body part of `count` bytes.
    mutating func dataDecoded(_ count: Int) {
        guard open else { return }
        data = Self.sum(data, count)
        parts = Self.sum(parts, 1)
    }

    /// The decoder gave the request's end, or the connection stopped carrying HTTP/1.1 requests
    /// (a WebSocket tunnel, HTTP/2): nothing more is counted until the next head.
    mutating func stop() {
        open = false
    }

    /// `count` bytes were read from the client, not yet decoded.
    mutating func read(_ count: Int) {
        guard open else { return }
        wire = Self.sum(wire, count)
    }

    /// Whether the bytes read during the open body hold more framing than it may have.
    var exceeded: Bool {
        guard open else { return false }
        let share = Self.sum(Self.allowance, Self.sum(Self.sum(data, data), Self.product(parts, Self.perPart)))
        return wire > Self.sum(data, share)
    }

    /// `a + b`, or `Int.max` where that overflows (counts only grow; nothing may trap).
    private static func sum(_ a: Int, _ b: Int) -> Int {
        let (result, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : result
    }

    private static func product(_ a: Int, _ b: Int) -> Int {
        let (result, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? .max : result
    }

    /// The error ``ClientConnectionGuard`` passes up the pipeline when a body's framing is too
    /// large: the request is refused as a parse error is.
    struct Exceeded: Error, Equatable {}
}
