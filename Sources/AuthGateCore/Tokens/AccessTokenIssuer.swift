#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Mints AuthGate access tokens with the active signing key: header
/// `{"alg":…,"kid":…,"typ":"JWT"}`, GoTrue's claims, compact JWS.
public struct AccessTokenIssuer: Sendable {
    private let keys: SigningKeys

    /// Signs with the active key of whatever ring is in force.
    public init(keys: SigningKeys) {
        self.keys = keys
    }

    /// Signs with the active key of a fixed ring.
    public init(keyRing: SigningKeyRing) {
        self.init(keys: SigningKeys(keyRing))
    }

    /// Signs `claims` with the active key.
    public func mint(_ claims: AccessTokenClaims) throws -> String {
        try mint(claims, metadata: nil)
    }

    /// ``mint(_:)`` with the claims' metadata text when already written
    /// (``AccessTokenClaims/serialized(metadata:)``).
    func mint(_ claims: AccessTokenClaims, metadata: ClaimsMetadataCache.Text?) throws -> String {
        let key = keys.current.activeKey
        return try key.compactJWS(encodedHeader: key.tokenHeader, payload: claims.serialized(metadata: metadata))
    }
}
