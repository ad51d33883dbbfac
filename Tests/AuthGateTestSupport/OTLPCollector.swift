import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// A stand-in OpenTelemetry collector: accepts OTLP/HTTP trace exports at `/v1/traces` and keeps
/// their bodies (protobuf; span names appear in them as plain bytes).
public final class OTLPCollector: Sendable {
    private let server: LocalServer
    private let received: Received

    final class Received: Sendable {
        let bodies = Mutex<[[UInt8]]>([])
    }

    public static func start() async throws -> OTLPCollector {
        let received = Received()
        let router = Router()
        router.post("/v1/traces") { request, _ -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 16 << 20)
            received.bodies.withLock { $0.append(Array(body.readableBytesView)) }
            return Response(status: .ok, headers: [.contentType: "application/x-protobuf"], body: .init(byteBuffer: ByteBuffer()))
        }
        return OTLPCollector(server: try await LocalServer.start(router), received: received)
    }

    private init(server: LocalServer, received: Received) {
        self.server = server
        self.received = received
    }

    /// The traces endpoint, `http://127.0.0.1:<port>/v1/traces`.
    public var endpoint: String { server.url + "/v1/traces" }

    /// Whether any export so far holds `text` (a span name, an attribute value).
    public func hasReceived(_ text: String) -> Bool {
        let needle = Array(text.utf8)
        return received.bodies.withLock { bodies in
            bodies.contains { body in
                guard body.count >= needle.count else { return false }
                return (0...(body.count - needle.count)).contains { body[$0..<($0 + needle.count)].elementsEqual(needle) }
            }
        }
    }

    public func stop() async {
        await server.stop()
    }
}
