import NIOCore

/// Gathers the flushes of an HTTP/2 connection's streams into one socket write per pass of the
/// event loop.
///
/// NIO's HTTP/2 handler flushes the connection whenever a stream flushes outside a read, so the
/// answers of streams that finish together (their tasks run one after another on the loop) each
/// cost a `writev`, and over TLS a record of their own. This handler sits between the HTTP/2
/// handler and the socket (or TLS): a flush marks the connection, and one flush goes down once
/// the loop's current tasks have run. A close first sends what is waiting, so a GOAWAY written
/// just before it is not lost. Used on the connection's event loop only.
final class HTTP2FlushBatcher: ChannelOutboundHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// A flush is scheduled and has not gone down yet.
    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            loopBoundSelf.value.flushNow(loopBoundContext.value)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context)
        context.close(mode: mode, promise: promise)
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }
}

@available(*, unavailable)
extension HTTP2FlushBatcher: Sendable {}
