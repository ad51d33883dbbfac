public import AuthGateCore
public import NIOCore
import NIOHTTP1
public import NIOPosix
import RedisBridge
public import ServiceLifecycle

/// Kept-alive HTTP/1.1 connections to upstreams, kept per event loop: a client connection's
/// requests use connections made on its own loop, which only that loop touches, so taking and
/// returning one costs no lock and no thread hop. Each loop holds at most its share of
/// `max_connections_per_upstream` (the limit divided by the loops, at least one) per upstream;
/// later requests on that loop wait for one to come free.
///
/// No redirects are followed and nothing is decompressed: bytes are relayed as they are. Runs as
/// a service that closes every idle connection after the server stops.
public final class UpstreamConnectionPool: Service, Sendable {
    /// Where a connection goes.
    struct Key: Hashable, Sendable {
        let host: String
        let port: Int
        /// For `https://`: how the connection's TLS is verified (routes with different settings
        /// to the same upstream never share a connection); nil for `http://`.
        let tls: TLSClientConfiguration?

        init(_ upstream: RouteConfiguration.Upstream, tls settings: TLSClientConfiguration) {
            host = upstream.host
            port = upstream.port
            tls = upstream.scheme == "https" ? settings : nil
        }
    }

    private let loops: PerEventLoop<LoopConnections>
    let connector: any UpstreamConnector
    /// The process's WebSocket tunnels against `proxy.max_websocket_tunnels`, shared by every
    /// loop. Each tunnel has an upstream connection of its own, outside the per-upstream limit,
    /// and over HTTP/2 one client connection carries as many tunnels as it may open streams, so
    /// neither `server.max_connections` nor that limit bounds them. A place is taken before the
    /// connection is made and given back when it closes, or at once when none was made: a
    /// refused handshake, a failed one and an ended tunnel each give theirs back, whatever path
    /// they took (``LoopConnections/connectTunnel(_:connectTimeout:)``).
    let tunnels: BoundedCounter

    /// - Parameters:
    ///   - maxConnectionsPerUpstream: the limit for the whole process, shared out among the loops.
    ///   - group: the loops client connections run on.
    ///   - routes: the routes whose `https://` upstreams' TLS contexts are made now, at start, rather
    ///     than on an event loop at their first connection.
    ///   - maxWebSocketTunnels: the most WebSocket tunnels open at once in the process (``tunnels``).
    public convenience init(
        maxConnectionsPerUpstream: Int, maxWebSocketTunnels: Int = 10_000, routes: [RouteConfiguration] = [],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.init(
            maxConnectionsPerUpstream: maxConnectionsPerUpstream, maxWebSocketTunnels: maxWebSocketTunnels, group: group,
            connector: SocketUpstreamConnector(routes: routes))
    }

    init(maxConnectionsPerUpstream: Int, maxWebSocketTunnels: Int = 10_000, group: any EventLoopGroup, connector: any UpstreamConnector) {
        let loopCount = max(1, Array(group.makeIterator()).count)
        let perLoop = max(1, maxConnectionsPerUpstream / loopCount)
        let tunnels = BoundedCounter(limit: maxWebSocketTunnels)
        self.connector = connector
        self.tunnels = tunnels
        self.loops = PerEventLoop(group: group) { loop in LoopConnections(eventLoop: loop, limit: perLoop, tunnels: tunnels, connector: connector) }
    }

    /// The connections of `loop`; call its methods on that loop only.
    func connections(on loop: any EventLoop) -> LoopConnections {
        loops.value(for: loop)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Closes every idle connection (busy ones close when their exchange ends or fails).
    public func shutdown() async {
        for connections in loops.all {
            try? await connections.eventLoop.submit { connections.closeIdle() }.get()
        }
    }
}

/// One event loop's upstream connections. Every method must be called on that loop.
final class LoopConnections: Sendable {
    let eventLoop: any EventLoop
    private let limit: Int
    private let tunnels: BoundedCounter
    private let connector: any UpstreamConnector
    private let upstreams: NIOLoopBoundBox<[UpstreamConnectionPool.Key: PerUpstream]>

    /// One upstream's connections on this loop; a reference, so taking and returning a connection
    /// mutates it in place (no copy of its lists).
    private final class PerUpstream {
        var idle: [UpstreamConnection] = []
        var open = 0
        var waiters = CircularBuffer<Waiter>()
    }

    private struct Waiter {
        let promise: EventLoopPromise<UpstreamConnection>
        let connectTimeout: TimeAmount
    }

    init(eventLoop: any EventLoop, limit: Int, tunnels: BoundedCounter, connector: any UpstreamConnector) {
        self.eventLoop = eventLoop
        self.limit = limit
        self.tunnels = tunnels
        self.connector = connector
        self.upstreams = NIOLoopBoundBox.makeBoxSendingValue([:], eventLoop: eventLoop)
    }

    /// `proxy.max_websocket_tunnels`, for the log line of a refused handshake.
    var tunnelLimit: Int { tunnels.limit }

    private func upstream(_ key: UpstreamConnectionPool.Key) -> PerUpstream {
        if let upstream = upstreams.value[key] { return upstream }
        let upstream = PerUpstream()
        upstreams.value[key] = upstream
        return upstream
    }

    /// A connection to `key`: an idle one, else a new one when under the limit, else the next to
    /// come free. ``UpstreamConnection/hasServed`` tells whether the upstream may have closed it
    /// meanwhile.
    func acquire(_ key: UpstreamConnectionPool.Key, connectTimeout: TimeAmount) -> EventLoopFuture<UpstreamConnection> {
        let upstream = upstream(key)
        while let connection = upstream.idle.popLast() {
            if connection.isActive { return eventLoop.assumeIsolated().makeSucceededFuture(connection) }
        }
        if upstream.open < limit {
            upstream.open += 1
            return connect(key, timeout: connectTimeout)
        }
        let promise = eventLoop.makePromise(of: UpstreamConnection.self)
        upstream.waiters.append(Waiter(promise: promise, connectTimeout: connectTimeout))
        return promise.futureResult
    }

    /// A connection of its own for a WebSocket tunnel: never pooled, not counted against the
    /// per-upstream limit but against the process's tunnels (``UpstreamConnectionPool/tunnels``), whose
    /// place it holds until it closes; ``UpstreamError/tunnelLimitReached`` when none is free.
    func connectTunnel(_ key: UpstreamConnectionPool.Key, connectTimeout: TimeAmount) -> EventLoopFuture<UpstreamConnection> {
        let tunnels = self.tunnels
        guard tunnels.tryTake() else { return eventLoop.makeFailedFuture(UpstreamError.tunnelLimitReached) }
        let connected = connector.connect(key, on: eventLoop, timeout: connectTimeout, tunnel: true)
        connected.whenComplete { result in
            switch result {
            case .success(let channel): channel.closeFuture.whenComplete { _ in tunnels.giveBack() }
            case .failure: tunnels.giveBack()
            }
        }
        return connected.flatMapThrowing { channel in
            do {
                return try UpstreamConnection(
                    channel: channel, key: key, handler: channel.pipeline.syncOperations.handler(type: UpstreamChannelHandler.self))
            } catch {
                channel.close(promise: nil)
                throw error
            }
        }
    }

    /// Ends an exchange on `connection`: handed to a waiter or kept idle when `reusable`, closed otherwise.
    func release(_ connection: UpstreamConnection, reusable: Bool) {
        connection.handler.endExchange()
        guard reusable, connection.isActive else {
            connection.channel.close(promise: nil)
            return
        }
        connection.hasServed = true
        let upstream = upstream(connection.key)
        if let waiter = upstream.waiters.popFirst() {
            waiter.promise.assumeIsolated().succeed(connection)
            return
        }
        upstream.idle.append(connection)
    }

    /// Closes every idle connection.
    func closeIdle() {
        for (_, upstream) in upstreams.value {
            for connection in upstream.idle { connection.channel.close(promise: nil) }
        }
    }

    private func connect(_ key: UpstreamConnectionPool.Key, timeout: TimeAmount) -> EventLoopFuture<UpstreamConnection> {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        return connector.connect(key, on: eventLoop, timeout: timeout, tunnel: false).flatMapThrowing { channel in
            let connection = try UpstreamConnection(
                channel: channel, key: key, handler: channel.pipeline.syncOperations.handler(type: UpstreamChannelHandler.self))
            let boundConnection = NIOLoopBound(connection, eventLoop: channel.eventLoop)
            channel.closeFuture.whenComplete { _ in bound.value.closed(boundConnection.value) }
            return connection
        }.flatMapErrorThrowing { error in
            bound.value.connectFailed(key)
            throw error
        }
    }

    /// A pooled connection closed: one fewer open, and the first waiter may connect.
    private func closed(_ connection: UpstreamConnection) {
        let upstream = upstream(connection.key)
        upstream.idle.removeAll { $0 === connection }
        upstream.open -= 1
        connectNextWaiter(connection.key)
    }

    private func connectFailed(_ key: UpstreamConnectionPool.Key) {
        upstream(key).open -= 1
        connectNextWaiter(key)
    }

    private func connectNextWaiter(_ key: UpstreamConnectionPool.Key) {
        let upstream = upstream(key)
        guard upstream.open < limit, let waiter = upstream.waiters.popFirst() else { return }
        upstream.open += 1
        connect(key, timeout: waiter.connectTimeout).assumeIsolated().whenComplete { waiter.promise.assumeIsolated().completeWith($0) }
    }
}
