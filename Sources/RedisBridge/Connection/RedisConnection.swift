public import Logging
public import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One pipelined connection to Redis: any number of tasks may call ``send(_:timeout:)`` at once;
/// their commands share the socket and their replies are matched in order.
///
/// Made by ``connect(to:configuration:eventLoop:logger:)``, which also runs the handshake
/// (`AUTH`, `SELECT`, `CLIENT SETNAME`). ``RedisClient`` pools these; ``RedisStreamReader`` keeps
/// one of its own for blocking reads.
public final class RedisConnection: Sendable {
    private let channel: any Channel
    private let commandTimeout: TimeAmount
    /// Commands handed over by callers and not yet written. Callers append; the first append
    /// into an empty outbox schedules one event-loop task that writes the whole batch and
    /// flushes once: under load, one hop and one `write(2)` serve many commands.
    private let outbox = Mutex<[RedisRequest]>([])
    private let closeReason: RedisCloseReason

    private init(channel: any Channel, commandTimeout: TimeAmount, closeReason: RedisCloseReason) {
        self.channel = channel
        self.commandTimeout = commandTimeout
        self.closeReason = closeReason
    }

    /// True while the socket is open.
    public var isActive: Bool { channel.isActive }

    /// The event loop this connection's I/O runs on.
    public var eventLoop: any EventLoop { channel.eventLoop }

    /// Completes when the connection has closed, for whatever reason.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Sends one command and waits for its reply.
    ///
    /// - Parameters:
    ///   - command: the command to send.
    ///   - timeout: how long to wait for the reply; the configured command timeout by default.
    ///     Blocking commands (`XREAD BLOCK`) pass their block time plus a margin.
    /// - Returns: the reply. An error reply is thrown as ``RedisError/Code/serverError``.
    /// - Throws: ``RedisError`` only.
    @discardableResult
    public func send(_ command: RedisCommand, timeout: TimeAmount? = nil) async throws -> RESPValue {
        let reply = try await sendReturningErrorReplies(command, timeout: timeout)
        if case .error(let message) = reply { throw RedisError(.serverError, message) }
        return reply
    }

    /// Like ``send(_:timeout:)``, but hands error replies back as ``RESPValue/error(_:)`` values.
    public func sendReturningErrorReplies(_ command: RedisCommand, timeout: TimeAmount? = nil) async throws -> RESPValue {
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        let request = RedisRequest(
            encodedCommand: command.encoded(allocator: channel.allocator),
            promise: promise,
            deadline: channel.eventLoop.now + (timeout ?? commandTimeout)
        )
        let start = ContinuousClock.now
        RedisMetrics.started()
        enqueue(request)
        do {
            let reply = try await promise.futureResult.get()
            RedisMetrics.finished(after: start, measured: timeout == nil)
            if case .error(let message) = reply {
                RedisMetrics.failed(.serverError)
                // A master demoted by a failover: drop the connection, so the next one asks the
                // Sentinels again.
                if message.hasPrefix("READONLY") { closeNow() }
            }
            return reply
        } catch let error as RedisError {
            RedisMetrics.finished(after: start, measured: false)
            RedisMetrics.failed(error.code)
            throw error
        } catch {
            RedisMetrics.finished(after: start, measured: false)
            RedisMetrics.failed(.connectionClosed)
            throw RedisError(.connectionClosed, "\(error)")
        }
    }

    private func enqueue(_ request: RedisRequest) {
        let isFirst = outbox.withLock { pending -> Bool in
            pending.append(request)
            return pending.count == 1
        }
        guard isFirst else { return }
        channel.eventLoop.execute { self.drainOutbox() }
    }

    /// Runs on the event loop: writes every queued command, then flushes once.
    private func drainOutbox() {
        let batch = outbox.withLock { pending -> [RedisRequest] in
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            return batch
        }
        // A closed channel has no handler left to fail the promises; fail them here.
        guard channel.isActive else {
            let reason = closeReason.recorded.map { "the connection to Redis is closed: \($0.message)" } ?? "the connection to Redis is closed"
            for request in batch { request.promise.fail(RedisError(.connectionClosed, reason)) }
            return
        }
        for request in batch { channel.write(request, promise: nil) }
        channel.flush()
    }

    /// Stops taking commands, waits for the replies still due, then closes.
    public func close() async {
        channel.triggerUserOutboundEvent(RedisGracefulCloseEvent(), promise: nil)
        try? await channel.closeFuture.get()
    }

    /// Closes at once; commands still waiting fail with ``RedisError/Code/connectionClosed``.
    public func closeNow() {
        channel.close(promise: nil)
    }

    /// Opens a connection and runs the handshake from the URL: `AUTH`, `SELECT`, `CLIENT SETNAME`.
    /// - Throws: ``RedisError`` (``RedisError/Code/connectionFailed`` when the server cannot be
    ///   reached or refuses the handshake).
    /// Connects to the configured server: the URL's, or the master the Sentinels name.
    public static func connect(configuration: RedisClientConfiguration, eventLoop: any EventLoop, logger: Logger) async throws -> RedisConnection {
        guard let sentinel = configuration.sentinel else {
            return try await connect(to: configuration.url, configuration: configuration, eventLoop: eventLoop, logger: logger)
        }
        var url = configuration.url
        (url.host, url.port) = try await RedisSentinelLocator.master(sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
        let connection = try await connect(to: url, configuration: configuration, eventLoop: eventLoop, logger: logger)
        // A Sentinel may still name a demoted master for a moment after a failover.
        let role = try? await connection.send(RedisCommand("ROLE"), timeout: configuration.connectTimeout)
        guard role?.array?.first?.string == "master" else {
            connection.closeNow()
            throw RedisError(.connectionFailed, "\(url.host):\(url.port), named master of \(sentinel.masterName), is not a master")
        }
        return connection
    }

    public static func connect(
        to url: RedisURL,
        configuration: RedisClientConfiguration,
        eventLoop: any EventLoop,
        logger: Logger
    ) async throws -> RedisConnection {
        let maxReplyBytes = configuration.maxReplyBytes
        let tls = configuration.tls
        let tlsContext: NIOSSLContext?
        do {
            tlsContext = url.tls ? try tls.makeContext() : nil
        } catch {
            throw RedisError(.invalidConfiguration, "TLS to \(url.host):\(url.port): \(error)")
        }
        let handshakeTimeout = configuration.connectTimeout
        let closeReason = RedisCloseReason()
        let channel: any Channel
        let handshake: EventLoopFuture<Void>?
        do {
            (channel, handshake) = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(configuration.connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: url.host, port: url.port) { channel in
                    channel.eventLoop.makeCompletedFuture { () -> (any Channel, EventLoopFuture<Void>?) in
                        let pipeline = channel.pipeline.syncOperations
                        var handshake: EventLoopFuture<Void>?
                        if let tlsContext {
                            let waiter = TLSHandshakeWaiter(eventLoop: channel.eventLoop, timeout: handshakeTimeout)
                            try pipeline.addHandler(try tls.makeHandler(context: tlsContext, host: url.host))
                            try pipeline.addHandler(waiter)
                            handshake = waiter.handshake.futureResult
                        }
                        try pipeline.addHandler(RedisChannelHandler(maxReplyBytes: maxReplyBytes, closeReason: closeReason, logger: logger))
                        return (channel, handshake)
                    }
                }
        } catch {
            throw RedisError(.connectionFailed, "could not connect to \(url.host):\(url.port): \(Self.describe(error))")
        }
        if let handshake {
            do {
                try await handshake.get()
            } catch {
                channel.close(promise: nil)
                throw RedisError(.connectionFailed, "TLS to \(url.host):\(url.port): \(tls.describe(handshakeError: error, host: url.host))")
            }
        }
        let connection = RedisConnection(channel: channel, commandTimeout: configuration.commandTimeout, closeReason: closeReason)
        do {
            try await connection.handshake(url: url, clientName: configuration.clientName, timeout: configuration.connectTimeout)
        } catch let error as RedisError {
            connection.closeNow()
            if error.code == .serverError {
                throw RedisError(.connectionFailed, "Redis at \(url.host):\(url.port) refused the handshake: \(error.message)")
            }
            throw error
        }
        return connection
    }

    private func handshake(url: RedisURL, clientName: String?, timeout: TimeAmount) async throws {
        if let password = url.password {
            if let username = url.username {
                try await send(RedisCommand("AUTH", .string(username), .string(password)), timeout: timeout)
            } else {
                try await send(RedisCommand("AUTH", .string(password)), timeout: timeout)
            }
        }
        if url.database != 0 {
            try await send(RedisCommand("SELECT", .integer(Int64(url.database))), timeout: timeout)
        }
        if let clientName, !clientName.isEmpty {
            try await send(RedisCommand("CLIENT", "SETNAME", .string(clientName)), timeout: timeout)
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let ioError = error as? IOError { return ioError.description }
        if error is ChannelError { return "\(error)" }
        return String(describing: error)
    }
}
