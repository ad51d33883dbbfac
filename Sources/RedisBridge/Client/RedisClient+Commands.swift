public import NIOCore

/// Typed helpers for the commands the gateway uses most. Anything else goes through
/// ``RedisClient/send(_:timeout:)`` with a ``RedisCommand``.
extension RedisClient {
    /// `PING`: true when Redis answers `PONG`.
    public func ping() async throws -> Bool {
        try await send(RedisCommand("PING")).string == "PONG"
    }

    /// `GET key` as text, nil when the key does not exist.
    public func get(_ key: String) async throws -> String? {
        try await send(RedisCommand("GET", .string(key))).string
    }

    /// `SET key value [PX ms] [NX]`; returns false when `NX` was given and the key existed.
    @discardableResult
    public func set(_ key: String, to value: RedisArgument, expiresIn: TimeAmount? = nil, onlyIfAbsent: Bool = false) async throws -> Bool {
        var arguments: [RedisArgument] = [.string(key), value]
        if let expiresIn { arguments += ["PX", .integer(max(1, expiresIn.nanoseconds / 1_000_000))] }
        if onlyIfAbsent { arguments.append("NX") }
        return try await !send(RedisCommand("SET", arguments: arguments)).isNull
    }

    /// `DEL key...`: how many keys were removed.
    @discardableResult
    public func delete(_ keys: String...) async throws -> Int {
        let reply = try await send(RedisCommand("DEL", arguments: keys.map { .string($0) }))
        guard let count = reply.int else { throw RedisError(.unexpectedReply, "DEL returned \(reply)") }
        return Int(count)
    }

    /// `XADD stream [MINID ~ <ms>-0] * field value ...`: the new entry's id. With
    /// `droppingBefore`, entries added before that time (milliseconds, on the Redis server's clock,
    /// which entry ids are) are trimmed, a whole node of entries at a time (`~`): a few older ones
    /// may stay a little longer, and none newer goes, however many there are.
    @discardableResult
    public func appendToStream(_ stream: String, fields: [(String, RedisArgument)], droppingBefore milliseconds: Int64? = nil) async throws
        -> String
    {
        var arguments: [RedisArgument] = [.string(stream)]
        if let milliseconds { arguments += ["MINID", "~", .string("\(milliseconds)-0")] }
        arguments.append("*")
        for (name, value) in fields { arguments += [.string(name), value] }
        let reply = try await send(RedisCommand("XADD", arguments: arguments))
        guard let id = reply.string else { throw RedisError(.unexpectedReply, "XADD returned \(reply)") }
        return id
    }
}
