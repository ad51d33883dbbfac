import NIOCore
import NIOHPACK
import NIOHTTP2

/// Keeps the response fields that never repeat out of the HPACK dynamic table of each HTTP/2
/// connection (RFC 7541 §7.1.3). NIO's codec marks every field of a response indexable, so each
/// answer's `x-request-id`, a value no later answer carries, took a table entry: the table held
/// mostly request ids, each evicting a field that would have been reused, and every later field
/// was looked up among them (about 30,000 instructions of a proxied answer's 460,000;
/// `bench/proxy/instructions.sh`). Marked `nonIndexable`, the request id is sent as a literal and
/// the table keeps the fields that do repeat. A `set-cookie` (the browser flow's, or an upstream's)
/// is `neverIndexed`: it is secret and unique, and a proxy after the gateway must not index it
/// either.
///
/// Sits before NIO's codec on each stream, so it sees the HEADERS the codec made of an answer's
/// head (and trailers); the fields keep their order and values.
final class HTTP2ResponseFieldIndexing: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .headers(var frame) = unwrapOutboundIn(data), let fields = Self.reindexed(frame.headers) else {
            context.write(data, promise: promise)
            return
        }
        frame.headers = fields
        context.write(wrapOutboundOut(.headers(frame)), promise: promise)
    }

    /// How a field named `name` (lower case, as NIO's codec writes it) may be indexed, when this
    /// handler decides it; nil leaves the codec's choice.
    static func indexing(of name: String) -> HPACKIndexing? {
        switch name.utf8.count {
        case 10 where name == "set-cookie": .neverIndexed
        case 12 where name == "x-request-id": .nonIndexable
        default: nil
        }
    }

    /// `fields` with the indexing of those ``indexing(of:)`` decides, in the same order; nil when
    /// none of them changes (trailers, a block already marked), which costs a scan and no copy.
    static func reindexed(_ fields: HPACKHeaders) -> HPACKHeaders? {
        guard fields.contains(where: { field in indexing(of: field.name).map { $0 != field.indexable } ?? false }) else { return nil }
        var result = HPACKHeaders()
        result.reserveCapacity(fields.count)
        for field in fields {
            result.add(name: field.name, value: field.value, indexing: indexing(of: field.name) ?? field.indexable)
        }
        return result
    }
}

@available(*, unavailable)
extension HTTP2ResponseFieldIndexing: Sendable {}
