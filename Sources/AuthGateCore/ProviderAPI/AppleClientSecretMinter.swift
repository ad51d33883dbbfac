import Synchronization

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Mints the `client_secret` JWT Apple demands on every `/auth/token` and `/auth/revoke` call
/// (`../shared/docs/apple-server-api.md` §1): header `alg` ES256 and `kid` (the Key ID); claims
/// `iss` (the Team ID), `sub` (the client id the call is made for), `aud`
/// `https://appleid.apple.com`, `iat` and `exp`. Secrets are short-lived (`client_secret_ttl`,
/// an hour by default) and cached per client id; one is renewed when half of its life is gone, so
/// a call never carries a secret about to expire and no operator pastes a six-month secret that
/// silently stops working.
public final class AppleClientSecretMinter: Sendable {
    /// A minted secret and the times it was made for.
    public struct Secret: Sendable, Hashable {
        public let value: String
        public let clientID: String
        public let issuedAt: Int64
        public let expiresAt: Int64
    }

    /// What `/readyz` shows: the identifiers and the secrets in the cache (never a secret).
    public struct Status: Sendable, Hashable {
        public let teamID: String
        public let keyID: String
        public let clientIDs: [String]
        /// The earliest expiry (Unix seconds) of a cached secret; nil when none was minted yet.
        public let earliestExpiry: Int64?
    }

    /// Apple's audience for client secrets.
    public static let audience = "https://appleid.apple.com"

    private let configuration: AppleServerConfiguration
    private let signingKey: SigningKey
    private let clientIDs: [String]
    private let cache = Mutex<[String: Secret]>([:])

    /// - Parameters:
    ///   - configuration: the Team ID, Key ID, `.p8` key and lifetime.
    ///   - clientIDs: the client ids secrets may be minted for (the Apple provider's audiences).
    public init(configuration: AppleServerConfiguration, clientIDs: [String]) {
        self.configuration = configuration
        self.signingKey = SigningKey(kid: configuration.keyID, state: .active, privateKey: .es256(configuration.privateKey))
        self.clientIDs = clientIDs
    }

    /// The secret to send with a call for `clientID`: the cached one while more than half of its
    /// life is left, else a new one.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/appleClientUnknown`` for a client id that
    ///   is not one of the provider's audiences (Apple would answer `invalid_client`).
    public func clientSecret(for clientID: String, now: Date = Date()) throws -> Secret {
        guard clientIDs.contains(clientID) else {
            throw AuthGateError(.appleClientUnknown, "\"\(clientID)\" is not one of providers.apple.audiences; no client secret is minted for it")
        }
        let nowSeconds = now.unixSeconds
        let lifetime = configuration.clientSecretLifetime.components.seconds
        if let cached = cache.withLock({ $0[clientID] }), cached.issuedAt <= nowSeconds, cached.expiresAt - nowSeconds > lifetime / 2 {
            return cached
        }
        let secret = try mint(for: clientID, issuedAt: nowSeconds, lifetime: lifetime)
        cache.withLock { $0[clientID] = secret }
        return secret
    }

    /// The identifiers and the cache's state, for `/readyz`.
    public func status() -> Status {
        let earliest = cache.withLock { $0.values.map(\.expiresAt).min() }
        return Status(teamID: configuration.teamID, keyID: configuration.keyID, clientIDs: clientIDs, earliestExpiry: earliest)
    }

    private func mint(for clientID: String, issuedAt: Int64, lifetime: Int64) throws -> Secret {
        let expiresAt = issuedAt + lifetime
        let header: JSONValue = .object(["alg": "ES256", "kid": .string(configuration.keyID)])
        let claims: JSONValue = .object([
            "iss": .string(configuration.teamID), "sub": .string(clientID), "aud": .string(Self.audience),
            "iat": .integer(issuedAt), "exp": .integer(expiresAt)
        ])
        let value: String
        do {
            value = try signingKey.compactJWS(header: header.serialized(), payload: claims.serialized())
        } catch {
            throw AuthGateError(.keyInvalid, "the Apple key \(configuration.keyID) could not sign a client secret")
        }
        return Secret(value: value, clientID: clientID, issuedAt: issuedAt, expiresAt: expiresAt)
    }
}
