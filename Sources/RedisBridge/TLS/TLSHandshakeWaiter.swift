public import NIOCore
import NIOTLS

/// Sits right after a client's `NIOSSLClientHandler` and completes ``handshake`` when the TLS
/// handshake has finished, or fails it with the handshake's error, when the connection closes
/// first, or after `timeout` (then it closes the connection). It removes itself once done, so the
/// connection's requests never pass through it.
public final class TLSHandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer

    /// Completes when the handshake has finished.
    public let handshake: EventLoopPromise<Void>
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var done = false

    /// - Parameters:
    ///   - eventLoop: the connection's loop.
    ///   - timeout: the longest the handshake may take.
    public init(eventLoop: any EventLoop, timeout: TimeAmount) {
        self.handshake = eventLoop.makePromise()
        self.timeout = timeout
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            loopBoundSelf.value.finish(.failure(TLSHandshakeTimeout()))
            loopBoundContext.value.close(promise: nil)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.ioOnClosedChannel))
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            finish(.success(()))
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.eof))
        context.fireChannelInactive()
    }

    /// Completes the handshake promise once, with the first outcome seen.
    private func finish(_ result: Result<Void, any Error>) {
        guard !done else { return }
        done = true
        timer?.cancel()
        timer = nil
        handshake.completeWith(result)
    }
}

@available(*, unavailable)
extension TLSHandshakeWaiter: Sendable {}
