#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// AuthGate's signing keys as loaded: exactly one active key, plus published and retired ones.
public struct SigningKeyRing: Sendable {
    /// Every key, in configuration order.
    public let keys: [SigningKey]
    /// True when the ring holds a throwaway key generated at start (development mode).
    public let isGenerated: Bool
    private let keysByID: [String: SigningKey]

    /// The key that signs new tokens.
    public var activeKey: SigningKey {
        guard let key = keys.first(where: { $0.state == .active }) else {
            preconditionFailure("a SigningKeyRing is only made with exactly one active key")
        }
        return key
    }

    /// The keys `/jwks` publishes: all of them. Active signs, published is learned by clients and
    /// proxies ahead of activation, retired still verifies tokens it signed until they expire.
    public var publishedKeys: [SigningKey] { keys }

    private init(keys: [SigningKey], isGenerated: Bool) {
        self.keys = keys
        self.isGenerated = isGenerated
        self.keysByID = Dictionary(keys.map { ($0.kid, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The key with this id, whatever its state.
    public func key(kid: String) -> SigningKey? {
        keysByID[kid]
    }

    /// Loads the configured keys, or generates a throwaway ES256 key when none is configured and
    /// `allowGenerated` is true (development mode).
    /// - Throws: ``AuthGateError`` naming the key that could not be used.
    public static func load(_ configuration: TokensConfiguration, allowGenerated: Bool) throws -> SigningKeyRing {
        if configuration.signingKeys.isEmpty {
            guard allowGenerated else {
                throw AuthGateError(.keySetInvalid, "no signing key is configured (tokens.signing_keys); generate one with `authgate keys generate`")
            }
            return SigningKeyRing(keys: [try SigningKey.generate(kid: "dev-\(randomSuffix())", algorithm: .es256)], isGenerated: true)
        }
        var keys: [SigningKey] = []
        for entry in configuration.signingKeys {
            guard let data = FileManager.default.contents(atPath: entry.file) else {
                throw AuthGateError(.keyUnreadable, "cannot read the key file of \"\(entry.kid)\": \(entry.file)")
            }
            keys.append(
                try SigningKey.parse(pem: String(decoding: data, as: UTF8.self), kid: entry.kid, algorithm: entry.algorithm, state: entry.state))
        }
        return try SigningKeyRing(validating: keys)
    }

    /// Makes a ring from keys, checking that exactly one is active and kids are unique.
    public init(validating keys: [SigningKey]) throws {
        let active = keys.filter { $0.state == .active }.count
        guard active == 1 else { throw AuthGateError(.keySetInvalid, "exactly one signing key must be active, found \(active)") }
        guard Set(keys.map(\.kid)).count == keys.count else { throw AuthGateError(.keySetInvalid, "signing key ids (kid) must be unique") }
        self.init(keys: keys, isGenerated: false)
    }

    private static func randomSuffix() -> String {
        (0..<4).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
    }
}
