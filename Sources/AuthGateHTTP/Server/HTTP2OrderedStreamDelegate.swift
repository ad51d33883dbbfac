import NIOCore
import NIOHTTP2

/// Hands NIO's stream events to the connection management handler in the order it requires:
/// each stream created before it is closed.
///
/// swift-nio-http2 (1.46) tells its stream delegate about a new stream only after the stream
/// channel's network activation. A stream channel that closed while its first HEADERS frame was
/// read (a header block it could not take, a request refused at once) is reset during that
/// activation, so the delegate hears "closed" first and "created" after. The management handler
/// asserts on that (a debug build stops: any client could stop it with one request), and a
/// release build then counts the stream as open for good, so the connection never closes for
/// idleness (`keep_alive_timeout`) and a client could hold connections without limit. Here a
/// stream closed before it was created is passed on as neither.
struct HTTP2OrderedStreamDelegate: NIOHTTP2StreamDelegate {
    /// Which events to pass on, per stream; a value, tested without channels.
    struct Order {
        private var open: Set<HTTP2StreamID> = []
        private var closedFirst: Set<HTTP2StreamID> = []

        /// Whether "created" is passed on (not when the stream was already announced closed).
        mutating func created(_ id: HTTP2StreamID) -> Bool {
            if closedFirst.remove(id) != nil { return false }
            open.insert(id)
            return true
        }

        /// Whether "closed" is passed on (only for a stream passed on as created).
        mutating func closed(_ id: HTTP2StreamID) -> Bool {
            if open.remove(id) != nil { return true }
            closedFirst.insert(id)
            return false
        }

        /// Streams announced closed whose creation has not been announced yet (at most one, for
        /// the length of NIO's call that announces it).
        var waitingForCreation: Int { closedFirst.count }
    }

    /// The order's state, on the connection's event loop.
    private final class State {
        var order = Order()
    }

    private let next: any NIOHTTP2StreamDelegate
    private let state: NIOLoopBound<State>

    init(passingTo next: any NIOHTTP2StreamDelegate, eventLoop: any EventLoop) {
        self.next = next
        self.state = NIOLoopBound(State(), eventLoop: eventLoop)
    }

    func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
        if state.value.order.created(id) { next.streamCreated(id, channel: channel) }
    }

    func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
        if state.value.order.closed(id) { next.streamClosed(id, channel: channel) }
    }
}

@available(*, unavailable)
extension HTTP2OrderedStreamDelegate.Order: Sendable {}
