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

    /// The command that runs the script with `tail` (`numkeys`, the keys, the arguments):
    /// `EVALSHA`, or `EVAL` with the source once the server has answered `NOSCRIPT`.
    func command(_ tail: [RedisArgument], sendingSource: Bool = false) -> RedisCommand {
        var all: [RedisArgument] = []
        all.reserveCapacity(2 + tail.count)
        all.append(sendingSource ? "EVAL" : "EVALSHA")
        all.append(.string(sendingSource ? source : sha1))
        all.append(contentsOf: tail)
        return RedisCommand(nameAndArguments: all)
    }

    /// `numkeys`, the keys and the arguments of a call, in one array.
    static func tail(keys: [String], arguments: [RedisArgument]) -> [RedisArgument] {
        var tail: [RedisArgument] = []
        tail.reserveCapacity(1 + keys.count + arguments.count)
        tail.append(.integer(Int64(keys.count)))
        for key in keys { tail.append(.string(key)) }
        tail.append(contentsOf: arguments)
        return tail
    }
}

extension RedisClient {
    /// Runs a script with `EVALSHA`; when Redis does not have it (`NOSCRIPT`: a restart, a
    /// failover, `SCRIPT FLUSH`), sends it whole with `EVAL` on the same connection, which also
    /// caches it. A reload is counted in `authgate_redis_script_loads_total`, not as an error.
    /// - Parameters:
    ///   - script: the script.
    ///   - keys: the keys it touches (`KEYS[1]`...); on Redis Cluster they must share a hash slot.
    ///   - arguments: `ARGV[1]`...
    ///   - acknowledgement: when set, the call returns only once that many replicas have the
    ///     script's writes: the script goes in the next acknowledgement round (the scripts of every
    ///     write waiting then and one `WAIT`, on a connection of its own, ``RedisReplicaWaiter``),
    ///     so no pooled connection is held while the replicas answer.
    /// - Returns: the script's reply.
    /// - Throws: ``RedisError``; an error raised by the script is a ``RedisError/Code/serverError``;
    ///   too few replicas in time is ``RedisError/Code/replicationTimeout`` (the write was made on
    ///   the master).
    @discardableResult
    public func evaluate(
        _ script: RedisScript, keys: [String], arguments: [RedisArgument] = [], acknowledgement: RedisReplicaAcknowledgement? = nil
    ) async throws -> RESPValue {
        let tail = RedisScript.tail(keys: keys, arguments: arguments)
        if let acknowledgement { return try await evaluateAcknowledged(script, tail: tail, acknowledgement: acknowledgement) }
        let connection = try await connection()
        var reply = try await send(script.command(tail), on: connection)
        if reply.isNoScript {
            RedisMetrics.scriptLoaded()
            reply = try await send(script.command(tail, sendingSource: true), on: connection)
        }
        if case .error(let message) = reply { throw RedisError(.serverError, message) }
        return reply
    }
}
