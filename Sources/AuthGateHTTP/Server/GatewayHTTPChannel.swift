public import AuthGateCore
import HTTPTypes
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOSSL

/// The pipeline of every client connection, as `authgate serve` runs it:
///
/// ```
/// NIOSSLServerHandler          with server.tls: the TLS context in force when the connection opened
/// ClientConnectionGuard        connection cap, request head / keep-alive / client idle timeouts
/// HTTP/1.1 codec (NIO)         decoder limits from Hummingbird's defaults
/// GatewayConnectionHandler     the one decision per request; proxy exchanges and refusals
/// HTTP1ToHTTPServerCodec       Hummingbird's types, for the requests it serves
/// Hummingbird                  the GoTrue API, health, metrics
/// ```
public struct GatewayHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    public typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    public let responder: HTTPChannelHandler.Responder
    private let proxy: EdgeProxy?
    private let tls: ServerTLSContext?
    private let limiter: ClientConnectionLimiter
    private let tickers: PerEventLoop<ClientConnectionTicker>
    private let timeouts: ClientConnectionDeadlines.Timeouts
    private let drainTimeout: TimeAmount
    private let tracing: Bool
    private let logger: Logger

    init(
        responder: @escaping HTTPChannelHandler.Responder, proxy: EdgeProxy?, tls: ServerTLSContext?, server: AuthGateCore.ServerConfiguration,
        tracing: Bool, group: any EventLoopGroup, logger: Logger
    ) {
        self.responder = responder
        self.tls = tls
        self.proxy = proxy
        self.limiter = ClientConnectionLimiter(limit: server.maxConnections)
        self.tickers = PerEventLoop(group: group) { ClientConnectionTicker(eventLoop: $0) }
        self.timeouts = ClientConnectionDeadlines.Timeouts(
            requestHead: .nanoseconds(server.requestHeadTimeout.nanoseconds), keepAlive: .nanoseconds(server.keepAliveTimeout.nanoseconds),
            clientIdle: .nanoseconds(server.clientIdleTimeout.nanoseconds)
        )
        self.drainTimeout = .nanoseconds(server.clientIdleTimeout.nanoseconds)
        self.tracing = tracing
        self.logger = logger
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls.context)) }
            let connectionGuard = ClientConnectionGuard(
                limiter: limiter, ticker: tickers.value(for: channel.eventLoop), timeouts: timeouts, logger: self.logger)
            try pipeline.addHandler(connectionGuard)
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false,
                withErrorHandling: false,
                withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(),
                withDecoderLimitConfiguration: NIOHTTPDecoderLimitConfiguration()
            )
            try pipeline.addHandler(
                GatewayConnectionHandler(
                    proxy: proxy, connectionGuard: connectionGuard, logger: self.logger, drainTimeout: drainTimeout, tracing: tracing,
                    eventLoop: channel.eventLoop
                )
            )
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: tls != nil))
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    public func handle(value asyncChannel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
