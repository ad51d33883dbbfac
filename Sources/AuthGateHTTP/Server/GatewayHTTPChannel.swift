import AuthGateCore
import HTTPTypes
import Hummingbird
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOHTTP2
public import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// The pipeline of every client connection, as `authgate serve` runs it:
///
/// ```
/// NIOSSLServerHandler          with server.tls: the TLS context in force when the connection opened
/// ClientConnectionGuard        connection cap, request head / keep-alive / client idle timeouts
/// ALPN or preface detection    h2 (ALPN `h2`, or the HTTP/2 preface on a plain listener) or HTTP/1.1
///
/// HTTP/1.1:                              HTTP/2:
/// HTTP/1.1 codec (NIO)                   HTTP2FlushBatcher (one socket write per pass of the loop),
///                                        NIOHTTP2Handler (flood guards) + connection management
///                                        per stream: HTTP2StreamDeadlines, HTTP2ResponseFieldIndexing,
///                                        HTTP2AuthorityHostCheck, HTTP2WebSocketStream (RFC 8441),
///                                        HTTP2FramePayloadToHTTP1ServerCodec
/// GatewayConnectionHandler     the one decision per request; proxy exchanges and refusals; the
///                              router called directly for requests with a small body
/// HTTP1ToHTTPServerCodec       Hummingbird's types, for the requests its channel serves
/// Hummingbird                  the GoTrue API, health, metrics for streamed requests
/// ```
///
/// An HTTP/1.1 connection has the last two from the start. An HTTP/2 stream gets them only when
/// its request must go through Hummingbird's channel; most never do (their request is answered
/// by the connection handler or proxied), and a `NIOAsyncChannel` per stream cost a quarter of
/// HTTP/2's floor.
///
/// An HTTP/2 stream is a request of its own, decided and served by the same handlers as an
/// HTTP/1.1 request; proxied requests go to upstreams over HTTP/1.1. A WebSocket opened on a
/// stream (RFC 8441's extended CONNECT) is decided and forwarded as the HTTP/1.1 handshake
/// (``HTTP2WebSocketStream``), and its tunnel runs on the stream's DATA frames (``HTTP2TunnelFraming``).
public struct GatewayHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    /// One request stream as Hummingbird reads it: a whole HTTP/1.1 connection, or one HTTP/2 stream.
    public typealias RequestChannel = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
    /// HTTP/1.1: the connection as Hummingbird reads it. HTTP/2: nothing; each stream is served by
    /// its own pipeline, and handed to Hummingbird only when a request needs it.
    typealias Negotiated = NIONegotiatedHTTPVersion<RequestChannel, Void>

    /// A connection, once it is known which HTTP version it speaks.
    public struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        public let channel: any Channel
    }

    public let responder: HTTPChannelHandler.Responder
    private let proxy: EdgeProxy?
    private let application: ApplicationPipeline?
    private let tls: ServerTLSContext?
    private let http2: HTTP2Configuration
    private let limiter: BoundedCounter
    private let tickers: PerEventLoop<ClientConnectionTicker>
    private let taskExecutors: PerEventLoop<EventLoopTaskExecutor>
    private let timeouts: ClientConnectionDeadlines.Timeouts
    private let drainTimeout: TimeAmount
    private let tracing: Bool
    private let logger: Logger

    init(
        responder: @escaping HTTPChannelHandler.Responder, router: (any HTTPResponder<AuthGateRequestContext>)?, proxy: EdgeProxy?,
        tls: ServerTLSContext?, server: AuthGateCore.ServerConfiguration, tracing: Bool, group: any EventLoopGroup, logger: Logger
    ) {
        self.responder = responder
        self.application = router.map { ApplicationPipeline(responder: $0, secure: tls != nil, logger: logger) }
        self.tls = tls
        self.proxy = proxy
        self.http2 = server.http2
        self.limiter = BoundedCounter(limit: server.maxConnections)
        self.tickers = PerEventLoop(group: group) { ClientConnectionTicker(eventLoop: $0) }
        self.taskExecutors = PerEventLoop(group: group) { EventLoopTaskExecutor(eventLoop: $0) }
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
                limiter: limiter, ticker: tickers.value(for: channel.eventLoop), timeouts: timeouts, http2: self.http2.enabled,
                logger: self.logger)
            try pipeline.addHandler(connectionGuard)
            // The negotiated protocol's initializer runs on this channel's loop, as the guard does.
            let boundGuard = NIOLoopBound(connectionGuard, eventLoop: channel.eventLoop)
            let http1: NIOChannelInitializerWithOutput<RequestChannel> = { channel in
                channel.eventLoop.makeCompletedFuture { try configureHTTP1(channel, connectionGuard: boundGuard.value) }
            }
            let http2: NIOChannelInitializerWithOutput<Void> = { channel in
                channel.eventLoop.makeCompletedFuture { try configureHTTP2(channel, connectionGuard: boundGuard.value) }
            }
            guard self.http2.enabled else {
                return Value(
                    negotiated: channel.eventLoop.makeSucceededFuture(.http1_1(try configureHTTP1(channel, connectionGuard: connectionGuard))),
                    channel: channel)
            }
            if tls != nil {
                let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                    switch result {
                    case .negotiated("h2"): http2(channel).map { .http2($0) }
                    case .negotiated("http/1.1"), .fallback: http1(channel).map { .http1_1($0) }
                    case .negotiated: channel.close().flatMapThrowing { throw NIOHTTP2Errors.invalidALPNToken() }
                    }
                }
                try pipeline.addHandler(negotiation)
                return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
            }
            let detector = HTTP2PriorKnowledgeDetector(eventLoop: channel.eventLoop, http1: http1, http2: http2)
            try pipeline.addHandler(detector)
            return Value(negotiated: detector.negotiated.futureResult, channel: channel)
        }
    }

    /// The rest of an HTTP/1.1 connection's pipeline, and the channel Hummingbird reads.
    private func configureHTTP1(_ channel: any Channel, connectionGuard: ClientConnectionGuard) throws -> RequestChannel {
        let pipeline = channel.pipeline.syncOperations
        // NIO's decoder, unpaired: the connection handler tells the encoder each request's method.
        let encoder = HTTP1ResponseEncoder()
        try pipeline.addHandlers([encoder, ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes))])
        try pipeline.addHandler(makeConnectionHandler(channel, connectionGuard: connectionGuard, headerListLimit: nil, responseEncoder: encoder))
        return try addRouterChannel(channel)
    }

    /// An HTTP/2 connection: NIO's handler with its flood guards (rapid reset, CONTINUATION and
    /// control-frame floods, glitches) at their defaults, the configured stream and header list
    /// limits, and connection management (idle close after `keep_alive_timeout` with no stream
    /// open, also when none was ever opened; GOAWAY on graceful shutdown, and a close
    /// `client_idle_timeout` after the first GOAWAY whether the client answers or not,
    /// ``HTTP2GracefulCloseDeadline``; its stream events in order, ``HTTP2OrderedStreamDelegate``).
    /// The connection guard's per-request deadlines stop: a connection carries many requests at once.
    private func configureHTTP2(_ channel: any Channel, connectionGuard: ClientConnectionGuard) throws {
        connectionGuard.becameMultiplexed()
        let management = NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: channel.eventLoop,
            configuration: .init(maxIdleTime: timeouts.keepAlive, maxAge: nil, maxGraceTime: drainTimeout, keepalive: nil)
        )
        let streams = HTTP2StreamLimit(limit: http2.maxConcurrentStreams)
        let webSockets = HTTP2WebSocketStreams()
        var configuration = NIOHTTP2Handler.Configuration()
        configuration.connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: http2.maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: http2.maxHeaderListSize)
        ]
        // RFC 8441: WebSockets on this connection's streams, where there are routes to carry them.
        if proxy != nil { configuration.connection.initialSettings.append(HTTP2Setting(parameter: .enableConnectProtocol, value: 1)) }
        try channel.pipeline.syncOperations.addHandler(HTTP2FlushBatcher())
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: configuration.connection, streamConfiguration: configuration.stream,
            streamDelegate: HTTP2OrderedStreamDelegate(passingTo: management.http2StreamDelegate, eventLoop: channel.eventLoop)
        ) { [limit = NIOLoopBound(streams, eventLoop: channel.eventLoop), sockets = NIOLoopBound(webSockets, eventLoop: channel.eventLoop)] stream in
            stream.eventLoop.makeCompletedFuture {
                guard try limit.value.admit(stream) else { return }
                let pipeline = stream.pipeline.syncOperations
                try pipeline.addHandler(HTTP2StreamDeadlines(clientIdle: timeouts.clientIdle))
                try pipeline.addHandler(HTTP2ResponseFieldIndexing())
                try pipeline.addHandler(HTTP2AuthorityHostCheck())
                if proxy != nil { try pipeline.addHandler(HTTP2WebSocketStream(webSockets: sockets.value)) }
                try pipeline.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                let handler = makeConnectionHandler(stream, connectionGuard: nil, headerListLimit: http2.maxHeaderListSize)
                handler.attachRouterChannel = { stream in
                    let requests = try addRouterChannel(stream)
                    Task(executorPreference: taskExecutors.value(for: stream.eventLoop)) {
                        await handleHTTP(asyncChannel: requests, logger: logger)
                    }
                }
                try pipeline.addHandler(handler)
            }
        }
        try channel.pipeline.syncOperations.addHandler(HTTP2GracefulCloseDeadline(limit: drainTimeout))
        try channel.pipeline.syncOperations.addHandler(management)
        try channel.pipeline.syncOperations.addHandler(HTTP2ConnectionCloser(streams: streams, webSockets: webSockets, logger: self.logger))
        // NIO's connection manager starts its idle timer (`keep_alive_timeout`) on channelActive,
        // which it never sees here: this pipeline is built on a connection already active (after
        // the preface, or ALPN). Without the timer a connection that opens no stream stayed open
        // for good. The handlers after NIO's HTTP/2 handler are told now, and only they.
        if channel.isActive { try channel.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self).fireChannelActive() }
    }

    /// The gateway's decision for the requests of `channel` (a connection or an HTTP/2 stream).
    private func makeConnectionHandler(
        _ channel: any Channel, connectionGuard: ClientConnectionGuard?, headerListLimit: Int?, responseEncoder: HTTP1ResponseEncoder? = nil
    ) -> GatewayConnectionHandler {
        GatewayConnectionHandler(
            proxy: proxy, application: application, connectionGuard: connectionGuard, logger: self.logger, drainTimeout: drainTimeout,
            tracing: tracing, eventLoop: channel.eventLoop, headerListLimit: headerListLimit,
            taskExecutor: taskExecutors.value(for: channel.eventLoop), responseEncoder: responseEncoder
        )
    }

    /// Hummingbird's types at the end of `channel`'s pipeline, and the channel Hummingbird reads.
    private func addRouterChannel(_ channel: any Channel) throws -> RequestChannel {
        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: tls != nil))
        return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
    }

    /// Serves the requests Hummingbird's channel reads (HTTP/2 streams; on HTTP/1.1 the requests
    /// the connection handler does not answer itself), on the connection's loop with no hop per
    /// resumption (``EventLoopTaskExecutor``; the streams' tasks inherit the preference).
    public func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(taskExecutors.value(for: value.channel.eventLoop)) {
            do {
                switch try await value.negotiated.get() {
                case .http1_1(let connection):
                    await handleHTTP(asyncChannel: connection, logger: logger)
                case .http2:
                    // The streams serve themselves; the connection is done when it closes.
                    try await value.channel.closeFuture.get()
                }
            } catch {
                logger.debug("client connection ended", metadata: ["gw.error": "\(type(of: error))"])
            }
        }
    }
}
