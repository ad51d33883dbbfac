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
    /// Runs a script with `EVALSHA`, loading it with `SCRIPT LOAD` when Redis does not have it, and
    /// sending it whole with `EVAL` if it was flushed again before the retry.
    /// - Parameters:
    ///   - script: the script.
    ///   - keys: the keys it touches (`KEYS[1]`...); on Redis Cluster they must share a hash slot.
    ///   - arguments: `ARGV[1]`...
    /// - Returns: the script's reply.
    /// - Throws: ``RedisError``; an error raised by the script is a ``RedisError/Code/serverError``.
    @discardableResult
    public func evaluate(_ script: RedisScript, keys: [String], arguments: [RedisArgument] = []) async throws -> RESPValue {
        let command = RedisCommand(
            "EVALSHA",
            arguments: [.string(script.sha1), .integer(Int64(keys.count))] + keys.map { .string($0) } + arguments
        )
        do {
            return try await send(command)
        } catch let error as RedisError where error.isNoScript {
            let loaded = try await send(RedisCommand("SCRIPT", "LOAD", .string(script.source)))
            guard loaded.string == script.sha1 else {
                throw RedisError(.unexpectedReply, "SCRIPT LOAD returned \(loaded), expected \(script.sha1)")
            }
            do {
                return try await send(command)
            } catch let error as RedisError where error.isNoScript {
                // Flushed again between the load and the call (a SCRIPT FLUSH, a failover): send
                // the source itself, which cannot miss.
                return try await send(
                    RedisCommand("EVAL", arguments: [.string(script.source), .integer(Int64(keys.count))] + keys.map { .string($0) } + arguments))
            }
        }
    }
}
