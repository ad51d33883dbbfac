import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import NIOCore
import Synchronization

/// A local upstream for proxy tests: answers every request with a JSON object describing what
/// it received (method, path, query, headers, body size), and counts requests. WebSocket upgrades
/// to `/ws/...` are accepted (choosing the first subprotocol offered): the first message is
/// `user=<X-AuthGate-User-Id received>`, then every message is echoed; ended ones are counted.
public final class EchoUpstream: Sendable {
    private let server: LocalServer
    private let counter: Counter

    /// Counts requests; shared between the router's closures and the upstream.
    final class Counter: Sendable {
        let value = Mutex(0)
        let webSocketsEnded = Mutex(0)
    }

    public static func start() async throws -> EchoUpstream {
        let counter = Counter()
        let router = Router()
        for method in [HTTPRequest.Method.get, .post, .put, .delete] {
            router.on("**", method: method) { request, _ in try await Self.echo(request, counter: counter) }
        }
        let webSocket = HTTPServerBuilder.http1WebSocketUpgrade(configuration: .init(ws: .init(maxFrameSize: 1 << 20))) { head, _, _ in
            guard head.path?.hasPrefix("/ws/") == true else { return .dontUpgrade }
            let user = head.headerFields[HTTPField.Name.test("X-AuthGate-User-Id")] ?? "none"
            // The first subprotocol offered is chosen, as a server that speaks it would.
            var answer = HTTPFields()
            if let offered = head.headerFields[HTTPField.Name.test("Sec-WebSocket-Protocol")]?.split(separator: ",").first {
                answer[HTTPField.Name.test("Sec-WebSocket-Protocol")] = offered.trimmingCharacters(in: .whitespaces)
            }
            return .upgrade(answer) { inbound, outbound, _ in
                defer { counter.webSocketsEnded.withLock { $0 += 1 } }
                try await outbound.write(.text("user=\(user)"))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    switch message {
                    case .text(let text): try await outbound.write(.text(text))
                    case .binary(let bytes): try await outbound.write(.binary(bytes))
                    }
                }
            }
        }
        return EchoUpstream(server: try await LocalServer.start(router, server: webSocket), counter: counter)
    }

    private init(server: LocalServer, counter: Counter) {
        self.server = server
        self.counter = counter
    }

    /// The loopback port it listens on.
    public var port: Int { server.port }
    /// `http://127.0.0.1:<port>`.
    public var url: String { server.url }
    /// Requests answered so far.
    public var requestCount: Int { counter.value.withLock { $0 } }
    /// WebSocket connections whose handler has returned (a close frame came, or the connection
    /// ended).
    public var webSocketsEnded: Int { counter.webSocketsEnded.withLock { $0 } }

    public func stop() async {
        await server.stop()
    }

    private static func echo(_ request: Request, counter: Counter) async throws -> Response {
        counter.value.withLock { $0 += 1 }
        var request = request
        let body = try await request.collectBody(upTo: 64 << 20)
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        let object: [String: Any] = [
            "method": request.method.rawValue, "path": request.uri.path, "query": request.uri.query ?? "",
            "headers": headers, "body_bytes": body.readableBytes
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/json", HTTPField.Name.test("X-Upstream"): "echo", .connection: "keep-alive, X-Secret-Hop",
                HTTPField.Name.test("X-Secret-Hop"): "1"
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

extension HTTPField.Name {
    /// A field name the test servers use, from a literal. A typo would fall back to `Via`, which
    /// no test sets or expects, so it shows as a missing header in the assertions, not a trap.
    static func test(_ literal: String) -> HTTPField.Name {
        HTTPField.Name(literal) ?? .via
    }
}
