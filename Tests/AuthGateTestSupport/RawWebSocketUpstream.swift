import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// An upstream that agrees to every WebSocket handshake (with the accept for RFC 6455's sample
/// key), optionally with a text frame in the same write as its `101`, and then only records the
/// bytes it receives, as they came, until the gateway closes the connection: for tests that
/// check exactly what reached the upstream (which frames, which close code) and that it was
/// closed.
public final class RawWebSocketUpstream: Sendable {
    private let channel: any Channel
    private let box: ConnectionsBox

    /// What one connection received after its handshake, and whether it has ended.
    public struct Recorded: Sendable {
        /// The handshake's head as it came (its request line and header lines).
        public var head = ""
        public var bytes: [UInt8] = []
        public var ended = false
    }

    /// The loopback port it listens on.
    public let port: Int
    /// Whether it serves TLS.
    public let servesTLS: Bool
    /// `http://127.0.0.1:<port>`, or `https://` when it serves TLS.
    public var url: String { "\(servesTLS ? "https" : "http")://127.0.0.1:\(port)" }

    /// Every connection so far, in the order they were accepted.
    public var recorded: [Recorded] { box.connections.withLock { $0 } }

    private init(channel: any Channel, port: Int, box: ConnectionsBox, servesTLS: Bool) {
        self.channel = channel
        self.port = port
        self.box = box
        self.servesTLS = servesTLS
    }

    /// - Parameters:
    ///   - greeting: a text frame (under 126 bytes) sent in the same write as the `101`.
    ///   - closesOnFirstFrame: close the connection (no close frame) when the first bytes after
    ///     the handshake arrive, as an upstream that restarts does.
    ///   - refusal: a close frame with this code and reason sent in the same write as the `101`,
    ///     the connection closed right after (an application that turns the caller away once
    ///     connected, without waiting for the closing handshake).
    ///   - tls: serve TLS with this certificate chain and key (PEM files): an `https://`
    ///     upstream, whose close sends TLS's `close_notify` before the FIN.
    ///   - answer: instead of agreeing, answer every handshake with these bytes (an HTTP
    ///     response, or nothing) and close the connection.
    public static func start(
        greeting: String? = nil, closesOnFirstFrame: Bool = false, refusal: (code: UInt16, reason: String)? = nil,
        tls: (certificate: String, key: String)? = nil, answer: String? = nil
    ) async throws -> RawWebSocketUpstream {
        let box = ConnectionsBox()
        let tlsContext = try tls.map { files in
            try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(files.certificate).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: files.key, format: .pem))))
        }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    let index = box.connections.withLock { connections in
                        connections.append(Recorded())
                        return connections.count - 1
                    }
                    if let tlsContext { try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tlsContext)) }
                    try child.pipeline.syncOperations.addHandler(
                        Handler(
                            box: box, index: index, greeting: greeting, closesOnFirstFrame: closesOnFirstFrame, refusal: refusal, answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw TestSupportError("the raw WebSocket upstream has no port") }
        return RawWebSocketUpstream(channel: channel, port: port, box: box, servesTLS: tls != nil)
    }

    public func stop() async {
        try? await channel.close()
    }

    /// Shares the recordings between the connection handlers and the upstream.
    private final class ConnectionsBox: Sendable {
        let connections = Mutex<[Recorded]>([])
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let box: ConnectionsBox
        private let index: Int
        private var head: [UInt8] = []
        private var upgraded = false
        private let greeting: String?
        private let closesOnFirstFrame: Bool
        private let refusal: (code: UInt16, reason: String)?
        private let answer: String?

        init(
            box: ConnectionsBox, index: Int, greeting: String?, closesOnFirstFrame: Bool, refusal: (code: UInt16, reason: String)?,
            answer: String?
        ) {
            self.box = box
            self.index = index
            self.greeting = greeting
            self.closesOnFirstFrame = closesOnFirstFrame
            self.refusal = refusal
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = Array(unwrapInboundIn(data).readableBytesView)
            if !upgraded {
                head += bytes
                guard let end = head.indices.dropLast(3).first(where: { head[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) }) else { return }
                upgraded = true
                let text = String(decoding: head[..<end], as: UTF8.self)
                box.connections.withLock { $0[index].head = text }
                bytes = Array(head[(end + 4)...])
                if let answer { return sendAndClose(ByteBuffer(string: answer), context: context) }
                let answer =
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
                var buffer = ByteBuffer(string: answer)
                if let greeting { buffer.writeBytes([0x81, UInt8(greeting.utf8.count)] + Array(greeting.utf8)) }
                if let refusal {
                    buffer.writeBytes([0x88, UInt8(2 + refusal.reason.utf8.count), UInt8(refusal.code >> 8), UInt8(refusal.code & 0xFF)])
                    buffer.writeBytes(Array(refusal.reason.utf8))
                    return sendAndClose(buffer, context: context)
                }
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            }
            box.connections.withLock { $0[index].bytes += bytes }
            if closesOnFirstFrame, !bytes.isEmpty { context.close(promise: nil) }
        }

        /// Writes `buffer`, then closes the connection (an upstream that answers and hangs up).
        private func sendAndClose(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            box.connections.withLock { $0[index].ended = true }
            context.fireChannelInactive()
        }
    }
}
