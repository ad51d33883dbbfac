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
    /// Commands handed over by callers and not yet written, and when to write them
    /// (``RedisOutbox``): batched per event-loop task, in parts of 16 when the callers run on
    /// the connection's own loop.
    private let outbox = Mutex(RedisOutbox<RedisRequest>())
    private let closeReason: RedisCloseReason
    /// The server this connection reached (for a Sentinel-found master, the master's address).
    public let address: RedisServerAddress

    private init(channel: any Channel, address: RedisServerAddress, commandTimeout: TimeAmount, closeReason: RedisCloseReason) {
        self.channel = channel
        self.address = address
        self.commandTimeout = commandTimeout
        self.closeReason = closeReason
    }

    /// True while the socket is open and nothing has decided to close it (a command past its
    /// deadline, an error, ``closeNow()``): a closing connection takes no new command.
    public var isActive: Bool { channel.isActive && !closeReason.isClosing }

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
        // One command: no arrays of commands, requests or replies (the path of nearly every call).
        let request = self.request(command, deadline: channel.eventLoop.now + (timeout ?? commandTimeout))
        let start = ContinuousClock.now
        RedisMetrics.started()
        enqueue(CollectionOfOne(request))
        return try await reply(to: request, since: start, measured: timeout == nil)
    }

    /// Writes several commands at once, in order, with nothing of another caller's between them
    /// on the wire, and waits for all their replies: one round trip (a script and the `WAIT` that
    /// must follow it on the same connection). Error replies come back as values.
    /// - Throws: ``RedisError`` only: the connection failed before every reply arrived.
    public func sendPipelined(_ commands: [RedisCommand], timeout: TimeAmount? = nil) async throws -> [RESPValue] {
        let deadline = channel.eventLoop.now + (timeout ?? commandTimeout)
        let requests = commands.map { request($0, deadline: deadline) }
        let start = ContinuousClock.now
        for _ in requests { RedisMetrics.started() }
        enqueue(requests)
        var replies: [RESPValue] = []
        replies.reserveCapacity(requests.count)
        var failure: RedisError?
        for request in requests {
            do {
                replies.append(try await reply(to: request, since: start, measured: timeout == nil))
            } catch {
                // Later promises fail too (the connection is gone); wait for each so none is left.
                failure = failure ?? (error as? RedisError ?? RedisError(.connectionClosed, "\(error)"))
            }
        }
        if let failure { throw failure }
        return replies
    }

    /// A command encoded, with the promise for its reply.
    private func request(_ command: RedisCommand, deadline: NIODeadline) -> RedisRequest {
        RedisRequest(
            encodedCommand: command.encoded(allocator: channel.allocator), promise: channel.eventLoop.makePromise(of: RESPValue.self),
            deadline: deadline)
    }

    /// Waits for the reply to `request` and counts it (error replies are returned as values).
    /// - Throws: ``RedisError`` only.
    private func reply(to request: RedisRequest, since start: ContinuousClock.Instant, measured: Bool) async throws -> RESPValue {
        do {
            let reply = try await request.promise.futureResult.get()
            RedisMetrics.finished(after: start, measured: measured)
            if case .error(let message) = reply, !reply.isNoScript { serverErrorReplied(message) }
            return reply
        } catch {
            let redisError = error as? RedisError ?? RedisError(.connectionClosed, "\(error)")
            RedisMetrics.finished(after: start, measured: false)
            RedisMetrics.failed(redisError.code)
            throw redisError
        }
    }

    /// Counts an error reply (not `NOSCRIPT`, which the caller answers with the script itself,
    /// counted by `RedisMetrics.scriptLoaded`), and drops a connection to a master that a failover
    /// demoted.
    private func serverErrorReplied(_ message: String) {
        RedisMetrics.failed(.serverError)
        // A master demoted by a failover: drop the connection, so the next one finds the new master.
        if message.hasPrefix("READONLY") { closeNow() }
    }

    /// Subscribes to `channels` (`SUBSCRIBE`): the connection then only receives, and every message
    /// the server pushes arrives on the returned stream (`["message", channel, payload]`; the
    /// confirmations of the second and later channels too), which ends when the connection closes.
    public func subscribe(to channels: [String]) async throws -> AsyncStream<RESPValue> {
        let (messages, continuation) = AsyncStream.makeStream(of: RESPValue.self, bufferingPolicy: .bufferingNewest(256))
        // On the event loop before the SUBSCRIBE is written (both go through it in order).
        channel.triggerUserOutboundEvent(RedisPushEvent(continuation: continuation), promise: nil)
        let reply = try await send(RedisCommand("SUBSCRIBE", arguments: channels.map { .string($0) }))
        guard reply.array?.first?.string == "subscribe" else {
            closeNow()
            throw RedisError(.unexpectedReply, "SUBSCRIBE answered \(reply)")
        }
        return messages
    }

    private func enqueue(_ requests: some Collection<RedisRequest> & Sendable) {
        let onEventLoop = channel.eventLoop.inEventLoop
        let action = outbox.withLock { $0.add(requests, callerOnEventLoop: onEventLoop) }
        switch action {
        case .none: return
        case .scheduleWrite: channel.eventLoop.execute { self.write(self.outbox.withLock { $0.takeScheduled() }) }
        case .writeNow: write(outbox.withLock { $0.takeNow() })
        }
    }

    /// Runs on the event loop: writes `batch` in order, then flushes once.
    private func write(_ batch: [RedisRequest]) {
        guard !batch.isEmpty else { return }
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
        closeReason.markClosing()
        channel.triggerUserOutboundEvent(RedisGracefulCloseEvent(), promise: nil)
        try? await channel.closeFuture.get()
    }

    /// Closes at once; commands still waiting fail with ``RedisError/Code/connectionClosed``.
    public func closeNow() {
        closeReason.markClosing()
        channel.close(promise: nil)
    }

    /// Connects to the configured server: the URL's, or the master the Sentinels name
    /// (``RedisSentinelLocator``; `preferredMaster` is tried first, the address last named by a
    /// Sentinel).
    public static func connect(
        configuration: RedisClientConfiguration, eventLoop: any EventLoop, logger: Logger, preferredMaster: RedisServerAddress? = nil
    ) async throws -> RedisConnection {
        guard let sentinel = configuration.sentinel else {
            return try await connect(to: configuration.url, configuration: configuration, eventLoop: eventLoop, logger: logger)
        }
        return try await RedisSentinelLocator.connectToMaster(
            sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger, preferred: preferredMaster)
    }

    /// Opens a connection to `url` and runs the handshake from it: `AUTH`, `SELECT`, `CLIENT SETNAME`.
    /// - Throws: ``RedisError`` (``RedisError/Code/connectionFailed`` when the server cannot be
    ///   reached or refuses the handshake).
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
        let address = RedisServerAddress(host: url.host, port: url.port)
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
            throw RedisError(.connectionFailed, "could not connect to \(address): \(RedisConnectError.describe(error))")
        }
        if let handshake {
            do {
                try await handshake.get()
            } catch {
                channel.close(promise: nil)
                throw RedisError(.connectionFailed, "TLS to \(address): \(tls.describe(handshakeError: error, host: url.host))")
            }
        }
        let connection = RedisConnection(
            channel: channel, address: address, commandTimeout: configuration.commandTimeout, closeReason: closeReason)
        do {
            try await connection.handshake(url: url, clientName: configuration.clientName, timeout: configuration.connectTimeout)
        } catch let error as RedisError {
            connection.closeNow()
            if error.code == .serverError {
                throw RedisError(.connectionFailed, "Redis at \(address) refused the handshake: \(error.message)")
            }
            throw error
        }
        return connection
    }

    private func handshake(url: RedisURL, clientName: String?, timeout: TimeAmount) async throws {
        // A named user always signs in, with an empty password when none is given (what a
        // `nopass` user accepts and any other refuses): a user named without its password is a
        // refused handshake, never a connection as the default user.
        if let username = url.username {
            try await send(RedisCommand("AUTH", .string(username), .string(url.password ?? "")), timeout: timeout)
        } else if let password = url.password {
            try await send(RedisCommand("AUTH", .string(password)), timeout: timeout)
        }
        if url.database != 0 {
            try await send(RedisCommand("SELECT", .integer(Int64(url.database))), timeout: timeout)
        }
        if let clientName, !clientName.isEmpty {
            try await send(RedisCommand("CLIENT", "SETNAME", .string(clientName)), timeout: timeout)
        }
    }
}
