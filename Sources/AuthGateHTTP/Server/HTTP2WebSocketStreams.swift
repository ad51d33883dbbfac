import NIOCore

/// The WebSocket streams of one HTTP/2 connection (handshakes under way and open tunnels),
/// told when graceful shutdown begins: NIO's connection manager only stops new streams, and a
/// tunnel, which does not end by itself, would hold the drain until the connection's grace
/// period ran out and then be cut without a close frame. Told, each ends with 1001 at once
/// (``WebSocketRelayHandler``), as tunnels over HTTP/1.1 do. Used on the connection's event
/// loop only.
final class HTTP2WebSocketStreams {
    private var streams: [ObjectIdentifier: any Channel] = [:]

    /// `stream` carries a WebSocket from now on.
    func opened(_ stream: any Channel) {
        streams[ObjectIdentifier(stream)] = stream
    }

    /// `stream` has closed (nothing if it carried no WebSocket).
    func closed(_ stream: any Channel) {
        streams.removeValue(forKey: ObjectIdentifier(stream))
    }

    /// Graceful shutdown began: every WebSocket stream is told, as an HTTP/1.1 connection is.
    func quiesce() {
        for stream in streams.values { stream.pipeline.syncOperations.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
    }
}

@available(*, unavailable)
extension HTTP2WebSocketStreams: Sendable {}
