import Crypto

/// A Lua script run with `EVALSHA`, loaded on demand.
///
/// The SHA-1 is computed once, here, so the first call goes straight to `EVALSHA`; if Redis
/// answers `NOSCRIPT` (a restart, `SCRIPT FLUSH`, a failover to a fresh replica) the client loads
/// the script and retries once, and if it was flushed again meanwhile, sends it whole (`EVAL`).
public struct RedisScript: Sendable, Hashable {
    /// The Lua source.
    public let source: String
    /// Lower-case hex SHA-1 of the source, as `SCRIPT LOAD` returns it.
    public let sha1: String

    /// Creates a script from its Lua source.
    public init(_ source: String) {
        self.source = source
        self.sha1 = Insecure.SHA1.hash(data: Array(source.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

extension RedisClient {
    /// Runs a script with `EVALSHA`; when Redis does not have it (`NOSCRIPT`: a restart, a
    /// failover, `SCRIPT FLUSH`), sends it whole with `EVAL`, which also caches it. A reload is
    /// counted in `authgate_redis_script_loads_total`, not as an error.
    /// - Parameters:
    ///   - script: the script.
    ///   - keys: the keys it touches (`KEYS[1]`...); on Redis Cluster they must share a hash slot.
    ///   - arguments: `ARGV[1]`...
    ///   - acknowledgement: when set, `WAIT` follows the script in the same round trip and the
    ///     call succeeds only once that many replicas have its writes.
    /// - Returns: the script's reply.
    /// - Throws: ``RedisError``; an error raised by the script is a ``RedisError/Code/serverError``;
    ///   too few replicas in time is ``RedisError/Code/replicationTimeout`` (the write was made on
    ///   the master).
    @discardableResult
    public func evaluate(
        _ script: RedisScript, keys: [String], arguments: [RedisArgument] = [], acknowledgement: RedisReplicaAcknowledgement? = nil
    ) async throws -> RESPValue {
        let tail: [RedisArgument] = [.integer(Int64(keys.count))] + keys.map { .string($0) } + arguments
        let evalsha = RedisCommand("EVALSHA", arguments: [.string(script.sha1)] + tail)
        let eval = RedisCommand("EVAL", arguments: [.string(script.source)] + tail)
        guard let acknowledgement else {
            var reply = try await sendReturningErrorReplies(evalsha)
            if reply.isNoScript {
                RedisMetrics.scriptLoaded()
                reply = try await sendReturningErrorReplies(eval)
            }
            if case .error(let message) = reply { throw RedisError(.serverError, message) }
            return reply
        }
        // Script and WAIT on one connection. The first call of a script on a connection goes alone:
        // a WAIT sent beside an EVALSHA that finds no script (a new master after a failover) would
        // block for its whole timeout while the new master has no replica yet, and then again
        // beside the EVAL.
        let connection = try await connection()
        let timeout = configuration.commandTimeout + acknowledgement.timeout
        var replies: [RESPValue]
        if connection.hasRun(script: script.sha1) {
            replies = try await sendPipelined([evalsha, acknowledgement.command], on: connection, timeout: timeout)
        } else {
            replies = try await sendPipelined([evalsha], on: connection, timeout: nil)
            if !(replies.first?.isNoScript ?? false) {
                replies += try await sendPipelined([acknowledgement.command], on: connection, timeout: timeout)
            }
        }
        if replies.first?.isNoScript ?? false {
            RedisMetrics.scriptLoaded()
            replies = try await sendPipelined([eval, acknowledgement.command], on: connection, timeout: timeout)
        }
        guard replies.count == 2 else { throw RedisError(.protocolError, "a script and its WAIT got \(replies.count) replies") }
        if case .error(let message) = replies[0] { throw RedisError(.serverError, message) }
        connection.ran(script: script.sha1)
        do {
            try acknowledgement.check(replies[1])
        } catch let error as RedisError {
            RedisMetrics.failed(error.code)
            throw error
        }
        return replies[0]
    }
}
