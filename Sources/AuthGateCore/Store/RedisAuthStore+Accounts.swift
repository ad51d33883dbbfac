#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import NIOCore
import RedisBridge

extension RedisAuthStore {
    public func user(id: String) async throws -> UserRecord? {
        guard case .bulkString(let buffer) = try await run(RedisCommand("GET", .string(keys.user(id)))) else { return nil }
        return try Self.decode(UserRecord.self, Array(buffer.readableBytesView))
    }

    public func saveUser(_ user: UserRecord) async throws {
        try await run(RedisCommand("SET", .string(keys.user(user.id)), .string(try Self.encode(user))))
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
            RedisCommand("HSET", .string(keys.identities(identity.userID)), .string("\(identity.provider):\(identity.subject)"), .string(try Self.encode(identity)))
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
