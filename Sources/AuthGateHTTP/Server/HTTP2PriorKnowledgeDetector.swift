import NIOCore
import NIOHTTP2

/// On a plain listener, tells a client that opens with the HTTP/2 connection preface
/// (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`: h2c with prior knowledge) from an HTTP/1 client by its
/// first bytes, has the connection configured for the one it speaks, hands those bytes on, and
/// removes itself. Anything that is not the preface, from its first differing byte, is HTTP/1.
final class HTTP2PriorKnowledgeDetector<HTTP1Output: Sendable, HTTP2Output: Sendable>: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1Output, HTTP2Output>

    /// The connection preface every HTTP/2 client sends first (RFC 9113, section 3.4).
    static var preface: [UInt8] { Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) }

    /// The configured connection, once the first bytes have told which protocol it speaks.
    let negotiated: EventLoopPromise<Negotiated>
    private let http1: NIOChannelInitializerWithOutput<HTTP1Output>
    private let http2: NIOChannelInitializerWithOutput<HTTP2Output>
    private var buffered: ByteBuffer?
    private var decided = false

    init(
        eventLoop: any EventLoop, http1: @escaping NIOChannelInitializerWithOutput<HTTP1Output>,
        http2: @escaping NIOChannelInitializerWithOutput<HTTP2Output>
    ) {
        self.negotiated = eventLoop.makePromise()
        self.http1 = http1
        self.http2 = http2
    }

    /// What the first bytes say: HTTP/2 once the whole preface has arrived, HTTP/1 at the first
    /// byte that differs from it, nil while they are a proper prefix of it.
    static func classify(_ bytes: ByteBufferView) -> Bool? {
        let preface = Self.preface
        for (index, byte) in zip(preface.indices, bytes) where preface[index] != byte { return false }
        return bytes.count >= preface.count ? true : nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        if buffered == nil {
            buffered = incoming
        } else {
            buffered?.writeBuffer(&incoming)
        }
        guard let bytes = buffered, let isHTTP2 = Self.classify(bytes.readableBytesView) else { return }
        decided = true
        let configured: EventLoopFuture<Negotiated> =
            isHTTP2 ? http2(context.channel).map { .http2($0) } : http1(context.channel).map { .http1_1($0) }
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        configured.assumeIsolated().whenComplete { result in
            let context = loopBoundContext.value
            loopBoundSelf.value.negotiated.completeWith(result)
            guard case .success = result else {
                context.close(promise: nil)
                return
            }
            loopBoundSelf.value.buffered = nil
            context.fireChannelRead(NIOAny(bytes))
            context.fireChannelReadComplete()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Undecided: ask for the rest of the preface.
        if !decided { context.read() }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided {
            decided = true
            negotiated.fail(ChannelError.eof)
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !decided {
            decided = true
            negotiated.fail(ChannelError.ioOnClosedChannel)
        }
    }
}

@available(*, unavailable)
extension HTTP2PriorKnowledgeDetector: Sendable {}
