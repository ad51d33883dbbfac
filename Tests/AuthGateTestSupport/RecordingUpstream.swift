import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback HTTP/1.1 upstream on NIO that records every request exactly as it arrived (method,
/// target, header lines in order, body size) and answers `200` with `upstream-ok`. It answers
/// upgrade requests `403` (an upstream that refuses WebSocket), and, in `answersEarly` mode,
/// answers as soon as a head arrives, before reading the body (as nginx's `return 200` does).
public final class RecordingUpstream: Sendable {
    /// One request as the upstream saw it.
    public struct Request: Sendable {
        public let method: String
        public let uri: String
        public let headers: [(name: String, value: String)]
        public var bodyBytes: Int

        /// The values of `name`, compared without regard to case.
        public func values(_ name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        }
    }

    private let channel: any Channel
    private let recorded: NIOLockedValueBox<[Request]>
    public let port: Int

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// The requests received so far, in order (bodies counted once complete).
    public var requests: [Request] { recorded.withLockedValue { $0 } }

    /// Upstream connections open now.
    public var openConnections: Int { openCount.withLockedValue { $0 } }
    private let openCount: NIOLockedValueBox<Int>
    /// Upstream connections accepted since the start.
    public var acceptedConnections: Int { acceptedCount.withLockedValue { $0 } }
    private let acceptedCount: NIOLockedValueBox<Int>

    public static func start(answersEarly: Bool = false) async throws -> RecordingUpstream {
        let recorded = NIOLockedValueBox<[Request]>([])
        let openCount = NIOLockedValueBox(0)
        let acceptedCount = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                openCount.withLockedValue { $0 += 1 }
                acceptedCount.withLockedValue { $0 += 1 }
                channel.closeFuture.whenComplete { _ in openCount.withLockedValue { $0 -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(Handler(recorded: recorded, answersEarly: answersEarly))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return RecordingUpstream(channel: channel, recorded: recorded, openCount: openCount, acceptedCount: acceptedCount)
    }

    private init(
        channel: any Channel, recorded: NIOLockedValueBox<[Request]>, openCount: NIOLockedValueBox<Int>, acceptedCount: NIOLockedValueBox<Int>
    ) {
        self.acceptedCount = acceptedCount
        self.channel = channel
        self.recorded = recorded
        self.openCount = openCount
        self.port = channel.localAddress?.port ?? 0
    }

    public func stop() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let recorded: NIOLockedValueBox<[Request]>
        let answersEarly: Bool
        var current: Request?
        var answered = false
        var isUpgrade = false

        init(recorded: NIOLockedValueBox<[Request]>, answersEarly: Bool) {
            self.recorded = recorded
            self.answersEarly = answersEarly
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                current = Request(method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) }, bodyBytes: 0)
                answered = false
                isUpgrade = head.headers.contains(name: "upgrade")
                if answersEarly || isUpgrade { answer(context) }
            case .body(let buffer):
                current?.bodyBytes += buffer.readableBytes
            case .end:
                if let current { recorded.withLockedValue { $0.append(current) } }
                current = nil
                if !answered { answer(context) }
                if isUpgrade { context.close(promise: nil) }
            }
        }

        private func answer(_ context: ChannelHandlerContext) {
            answered = true
            let body = ByteBuffer(string: isUpgrade ? "no upgrade here" : "upstream-ok")
            let status: HTTPResponseStatus = isUpgrade ? .forbidden : .ok
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: ["Content-Length": String(body.readableBytes)]))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
