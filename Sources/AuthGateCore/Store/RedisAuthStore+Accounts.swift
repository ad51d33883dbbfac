import NIOCore
import RedisBridge

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

extension RedisAuthStore {
    public func user(id: String) async throws -> UserRecord? {
        guard case .bulkString(let buffer) = try await run(RedisCommand("GET", .string(keys.user(id)))) else { return nil }
        return try Self.decode(UserRecord.self, Array(buffer.readableBytesView))
    }

    public func saveUser(_ user: UserRecord) async throws {
        try await run(RedisCommand("SET", .string(keys.user(user.id)), .string(try Self.encode(user))))
        try await run(RedisCommand("ZADD", .string(keys.users), "NX", .integer(Self.milliseconds(user.createdAt)), .string(user.id)))
    }

    public func identities(ofUser userID: String) async throws -> [IdentityRecord] {
        let reply = try await run(RedisCommand("HVALS", .string(keys.identities(userID))))
        return try (reply.array ?? []).compactMap { value in
            guard case .bulkString(let buffer) = value else { return nil }
            return try Self.decode(IdentityRecord.self, Array(buffer.readableBytesView))
        }.sorted { $0.createdAt < $1.createdAt }
    }

    public func saveIdentity(_ identity: IdentityRecord) async throws {
        try await run(
            RedisCommand(
                "HSET", .string(keys.identities(identity.userID)), .string("\(identity.provider):\(identity.subject)"),
                .string(try Self.encode(identity)))
        )
    }

    public func owner(ofIdentity provider: String, subject: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.identityIndex(provider, subject)))).string
    }

    public func claimIdentity(provider: String, subject: String, userID: String) async throws -> String {
        try await claim(keys.identityIndex(provider, subject), for: userID)
    }

    public func owner(ofEmail email: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.emailIndex(email)))).string
    }

    public func claimEmail(_ email: String, userID: String) async throws -> String {
        try await claim(keys.emailIndex(email), for: userID)
    }

    public func releaseEmail(_ email: String, userID: String) async throws {
        try await run(Self.deleteIfOwnedScript, keys: [keys.emailIndex(email)], arguments: [.string(userID)])
    }

    public func listUsers(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int) {
        let total = Int(try await run(RedisCommand("ZCARD", .string(keys.users))).int ?? 0)
        guard limit > 0, offset < total else { return ([], total) }
        let ids =
            try await run(RedisCommand("ZRANGE", .string(keys.users), .integer(Int64(offset)), .integer(Int64(offset + limit - 1)))).array?
            .compactMap(\.string) ?? []
        var users: [UserRecord] = []
        for id in ids {
            if let user = try await user(id: id) { users.append(user) }
        }
        return (users, total)
    }

    public func deleteIdentity(provider: String, subject: String, userID: String) async throws {
        try await run(RedisCommand("HDEL", .string(keys.identities(userID)), .string("\(provider):\(subject)")))
        try await run(Self.deleteIfOwnedScript, keys: [keys.identityIndex(provider, subject)], arguments: [.string(userID)])
    }

    public func deleteUser(_ userID: String) async throws -> [String] {
        for identity in try await identities(ofUser: userID) {
            try await deleteIdentity(provider: identity.provider, subject: identity.subject, userID: userID)
        }
        if let email = try await user(id: userID)?.email {
            try await releaseEmail(email, userID: userID)
        }
        let sessionIDs = try await sessions(ofUser: userID).map(\.id)
        let ended = try await deleteSessions(userID: userID, sessionIDs: sessionIDs)
        try await run(RedisCommand("DEL", .string(keys.user(userID)), .string(keys.identities(userID)), .string(keys.sessions(userID))))
        try await run(RedisCommand("ZREM", .string(keys.users), .string(userID)))
        return ended
    }

    /// Deletes KEYS[1] only while it holds ARGV[1] (an index entry pointing at the user removed).
    static let deleteIfOwnedScript = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """
    )

    /// `SET key userID NX GET`: one round trip that either claims the key or reads its owner.
    private func claim(_ key: String, for userID: String) async throws -> String {
        let previous = try await run(RedisCommand("SET", .string(key), .string(userID), "NX", "GET"))
        return previous.string ?? userID
    }

    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ bytes: [UInt8]) throws -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(type, from: Data(bytes))
        } catch {
            throw AuthGateError(.storeCorrupt, "a stored \(type) does not decode: \(error)")
        }
    }
}
