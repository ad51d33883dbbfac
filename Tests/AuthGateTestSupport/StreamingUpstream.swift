import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A local upstream for streaming tests:
/// - `GET /download/<bytes>`: that many bytes in 64 KiB chunks, generated as they are sent;
/// - `POST /upload`: reads the body as it comes and answers the byte count (nothing is kept);
/// - `GET /events/<count>`: server-sent events, each sent only after ``releaseEvent()``;
/// - `GET /endless`: chunks until the connection goes away (recorded in ``endlessStopped``);
/// - `GET /stall-head`: never answers; `GET /stall-body`: a head and one chunk, then silence.
public final class StreamingUpstream: Sendable {
    private let server: LocalServer
    private let state: State

    final class State: Sendable {
        let eventGate: AsyncStream<Void>.Continuation
        let eventReleases: AsyncStream<Void>
        let endlessStopped = Mutex(false)
        let endlessBytes = Mutex(0)

        init() {
            (eventReleases, eventGate) = AsyncStream<Void>.makeStream()
        }
    }

    public static func start() async throws -> StreamingUpstream {
        let state = State()
        let router = Router()
        router.get("download/:bytes") { _, context in
            let total = try context.parameters.require("bytes", as: Int.self)
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream", .contentLength: String(total)],
                body: ResponseBody { writer in
                    var sent = 0
                    let chunk = ByteBuffer(repeating: 0x61, count: 64 << 10)
                    while sent < total {
                        let size = min(chunk.readableBytes, total - sent)
                        try await writer.write(size == chunk.readableBytes ? chunk : ByteBuffer(repeating: 0x61, count: size))
                        sent += size
                    }
                    try await writer.finish(nil)
                })
        }
        router.post("upload") { request, _ in
            var count = 0
            for try await buffer in request.body { count += buffer.readableBytes }
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: String(count))))
        }
        router.get("events/:count") { _, context in
            let count = try context.parameters.require("count", as: Int.self)
            return Response(
                status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: ResponseBody { writer in
                    var releases = state.eventReleases.makeAsyncIterator()
                    for index in 1...count {
                        guard await releases.next() != nil else { break }
                        try await writer.write(ByteBuffer(string: "id: \(index)\ndata: event \(index)\n\n"))
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("endless") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody { writer in
                    let chunk = ByteBuffer(repeating: 0x62, count: 16 << 10)
                    do {
                        while true {
                            try await writer.write(chunk)
                            state.endlessBytes.withLock { $0 += chunk.readableBytes }
                        }
                    } catch {
                        state.endlessStopped.withLock { $0 = true }
                        throw error
                    }
                })
        }
        router.get("stall-head") { _, _ -> Response in
            try await Task.sleep(for: .seconds(3600))
            return Response(status: .ok)
        }
        router.get("stall-body") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "first chunk\n"))
                    try await Task.sleep(for: .seconds(3600))
                    try await writer.finish(nil)
                })
        }
        return StreamingUpstream(server: try await LocalServer.start(router), state: state)
    }

    private init(server: LocalServer, state: State) {
        self.server = server
        self.state = state
    }

    /// The loopback port it listens on.
    public var port: Int { server.port }
    /// `http://127.0.0.1:<port>`.
    public var url: String { server.url }

    /// Lets the event stream send its next event.
    public func releaseEvent() {
        state.eventGate.yield()
    }

    /// Whether the endless download noticed that nobody reads it any more.
    public var endlessStopped: Bool { state.endlessStopped.withLock { $0 } }
    /// Bytes the endless download has written so far.
    public var endlessBytes: Int { state.endlessBytes.withLock { $0 } }

    public func stop() async {
        await server.stop()
    }
}
