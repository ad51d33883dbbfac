import AuthGateCore
import Logging
public import NIOCore
import NIOHTTP1
public import NIOPosix
import NIOSSL
public import ServiceLifecycle
import Synchronization

/// Kept-alive HTTP/1.1 connections to upstreams, at most `maxConnectionsPerUpstream` per upstream
/// (later callers wait for one to come free).
///
/// New connections are made on the client connection's event loop, so the client's and the
/// upstream's sockets share a thread (and ``ProxyFastPathHandler`` can use them). No redirects are followed and nothing is decompressed:
/// bytes are relayed as they are. Runs as a service that closes every connection after the server
/// stops.
public final class UpstreamConnectionPool: Service, Sendable {
    /// Where a connection goes.
    struct Key: Hashable, Sendable {
        let host: String
        let port: Int
        let tls: Bool

        init(_ upstream: RouteConfiguration.Upstream) {
            host = upstream.host
            port = upstream.port
            tls = upstream.scheme == "https"
        }
    }

    private struct Connections {
        var idle: [UpstreamConnection] = []
        var open = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex<[Key: Connections]>([:])
    private let maxConnectionsPerUpstream: Int
    private let group: any EventLoopGroup
    private let tlsContext: NIOSSLContext?

    public init(maxConnectionsPerUpstream: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.maxConnectionsPerUpstream = maxConnectionsPerUpstream
        self.group = group
        self.tlsContext = try? NIOSSLContext(configuration: .makeClientConfiguration())
    }

    /// A connection to `key`: an idle one on `eventLoop`, else a new one on it when under the
    /// limit, else an idle one elsewhere, else the next to come free. `reused` tells whether
    /// it served an exchange before (and so may have been closed by the upstream meanwhile).
    func acquire(_ key: Key, on eventLoop: any EventLoop, connectTimeout: TimeAmount) async throws -> (connection: UpstreamConnection, reused: Bool) {
        while true {
            enum Next { case reuse(UpstreamConnection), connect, wait }
            let next: Next = state.withLock { state in
                var connections = state[key, default: Connections()]
                defer { state[key] = connections }
                connections.idle.removeAll { !$0.channel.isActive }
                // An idle connection on this loop, else a new one on it, else any idle one.
                if let index = connections.idle.lastIndex(where: { $0.channel.eventLoop === eventLoop }) {
                    return .reuse(connections.idle.remove(at: index))
                }
                if connections.open < maxConnectionsPerUpstream {
                    connections.open += 1
                    return .connect
                }
                if let idle = connections.idle.popLast() { return .reuse(idle) }
                return .wait
            }
            switch next {
            case .reuse(let connection):
                return (connection, true)
            case .connect:
                do {
                    return (try await connect(key, on: eventLoop, timeout: connectTimeout), false)
                } catch {
                    closed(key)
                    throw error
                }
            case .wait:
                await withCheckedContinuation { continuation in
                    state.withLock { $0[key, default: Connections()].waiters.append(continuation) }
                }
            }
        }
    }

    /// An idle connection to `key` made on `eventLoop`, or nil: for callers that must not wait.
    func takeIdle(_ key: Key, on eventLoop: any EventLoop) -> UpstreamConnection? {
        state.withLock { state in
            guard var connections = state[key] else { return nil }
            defer { state[key] = connections }
            guard let index = connections.idle.lastIndex(where: { $0.channel.eventLoop === eventLoop && $0.channel.isActive }) else { return nil }
            return connections.idle.remove(at: index)
        }
    }

    /// Ends an exchange on `connection`: back to the idle list when it can serve another.
    func release(_ connection: UpstreamConnection, reusable: Bool) {
        guard reusable, connection.channel.isActive else { return }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state[connection.key, default: Connections()].idle.append(connection)
            return state[connection.key]?.waiters.isEmpty == false ? state[connection.key]!.waiters.removeFirst() : nil
        }
        waiter?.resume()
    }

    /// A connection to `key` closed: one fewer open, and a waiter may connect.
    private func closed(_ key: Key, connection: UpstreamConnection? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard var connections = state[key] else { return nil }
            connections.open -= 1
            if let connection { connections.idle.removeAll { $0 === connection } }
            let waiter = connections.waiters.isEmpty ? nil : connections.waiters.removeFirst()
            state[key] = connections
            return waiter
        }
        waiter?.resume()
    }

    private func connect(_ key: Key, on eventLoop: any EventLoop, timeout: TimeAmount) async throws -> UpstreamConnection {
        let tlsContext = self.tlsContext
        if key.tls, tlsContext == nil { throw UpstreamError.connectFailed }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if key.tls, let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tlsContext, serverHostname: key.host))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(UpstreamResponseHandler())
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: key.host, port: key.port).get()
        } catch ChannelError.connectTimeout {
            throw UpstreamError.connectTimeout
        } catch {
            throw UpstreamError.connectFailed
        }
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: UpstreamResponseHandler.self), eventLoop: channel.eventLoop)
        }.get()
        let connection = UpstreamConnection(channel: channel, key: key, handler: handler)
        channel.closeFuture.whenComplete { [weak self] _ in self?.closed(key, connection: connection) }
        return connection
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Closes every idle connection (busy ones close when their exchange ends or fails).
    public func shutdown() async {
        let idle = state.withLock { state in state.values.flatMap(\.idle) }
        for connection in idle { try? await connection.channel.close() }
    }
}
