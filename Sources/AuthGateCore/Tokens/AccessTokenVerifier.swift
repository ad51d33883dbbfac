#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Verifies AuthGate's own access tokens: `kid` must name one of our keys (active, published or
/// retired), `alg` must be that key's algorithm, the signature must verify, and `iss`, `aud` and
/// `exp` must match. It says nothing about the session: callers check that it is alive.
public struct AccessTokenVerifier: Sendable {
    private let keys: SigningKeys
    private let issuer: String
    private let audience: String

    /// Verifies against whatever ring is in force (a key removed by a reload stops verifying).
    public init(keys: SigningKeys, issuer: String, audience: String) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
    }

    /// Verifies against a fixed ring.
    public init(keyRing: SigningKeyRing, issuer: String, audience: String) {
        self.init(keys: SigningKeys(keyRing), issuer: issuer, audience: audience)
    }

    /// The claims of a valid token.
    /// - Throws: ``AuthGateError`` with the rejection reason (`malformed`, `algorithm_not_allowed`,
    ///   `missing_kid`, `unknown_kid`, `bad_signature`, `issuer`, `audience`, `expired`).
    public func verify(_ token: String, now: Date) throws -> AccessTokenClaims {
        let jwt = try CompactJWT(parsing: token)
        guard let kid = jwt.keyID, !kid.isEmpty else { throw AuthGateError(.missingKeyID, "the token header has no kid") }
        guard let key = keys.current.key(kid: kid) else {
            throw AuthGateError(.unknownKeyID, "no signing key has kid \"\(ProviderKeySet.printable(kid))\"")
        }
        guard jwt.algorithm == key.algorithm.rawValue else {
            throw AuthGateError(
                .algorithmNotAllowed, "alg \(ProviderKeySet.printable(jwt.algorithm)) is not the \(key.algorithm.rawValue) of key \(kid)")
        }
        guard key.isValidSignature(jwt.signature, for: jwt.signedBytes) else {
            throw AuthGateError(.badSignature, "the signature does not verify with key \(kid)")
        }
        guard let members = (try? JSONValue.parse(try jwt.payloadBytes()))?.objectValue else {
            throw AuthGateError(.malformed, "the claims are not an AuthGate access token")
        }
        let claims = try AccessTokenClaims(json: members)
        try check(claims, now: now)
        return claims
    }

    /// Whether a token with `claims`, just signed by the ring's active key, passes ``verify(_:now:)``:
    /// the checks after the signature.
    func wouldAccept(_ claims: AccessTokenClaims, now: Date) -> Bool {
        (try? check(claims, now: now)) != nil
    }

    /// The claims' `iss`, `aud` (byte for byte) and `exp`.
    private func check(_ claims: AccessTokenClaims, now: Date) throws {
        guard ByteExactString(claims.iss) == ByteExactString(issuer) else { throw AuthGateError(.issuer, "iss \(claims.iss) is not \(issuer)") }
        guard ByteExactString(claims.aud) == ByteExactString(audience) else { throw AuthGateError(.audience, "aud \(claims.aud) is not \(audience)") }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw AuthGateError(.expired, "the token expired at \(claims.exp)") }
    }
}
