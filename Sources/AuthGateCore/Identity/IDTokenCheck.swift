import Crypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The checks every ID-token provider shares, in GoTrue's order: signature (by `kid`, with the
/// configured algorithm), issuer, expiry, `nbf`/`iat`, `at_hash` (``AccessTokenHashRule``),
/// `sub`, audience, nonce.
struct IDTokenCheck: Sendable {
    /// What the token is for: a sign-in's ID token, or a provider's signed server-to-server
    /// notification (no `sub` of its own: the subject is inside its events; no nonce).
    enum Purpose: Sendable {
        case signIn, serverNotification
    }

    let configuration: ProvidersConfiguration.IDTokenProvider
    let keySet: ProviderKeySet
    var purpose = Purpose.signIn

    /// The verified token's claims.
    struct Verified: Sendable {
        let claims: [String: JSONValue]
        let subject: String
        let issuer: String
        let expiresAt: Date
        let issuedAt: Date?
        let tokenHash: String
    }

    /// The longest an ID token may claim to live from now (31 days; Auth0 allows 30).
    static let maximumLifetime: Double = 31 * 86_400

    /// What single use is keyed on: the SHA-256 of the signed part (`header.payload`), which the
    /// signature fixes (``run(idToken:rawNonce:accessToken:now:)`` computes it once, for the
    /// signature too). Decoding is strict, so that part has one spelling; the signature is left
    /// out because ECDSA allows a second valid one for the same claims (`s` and `n - s`).
    static func replayKey(signedDigest: SHA256Digest) -> String {
        Base64URL.hex(signedDigest)
    }

    /// - Parameter accessToken: the provider access token sent with the ID token, if any: checked
    ///   against its `at_hash`.
    func run(idToken: String, rawNonce: String?, accessToken: String? = nil, now: Date) async throws -> Verified {
        let token = try CompactJWT(parsing: idToken)
        guard token.algorithm == configuration.algorithm.rawValue else {
            throw AuthGateError(
                .algorithmNotAllowed,
                "alg \(ProviderKeySet.printable(token.algorithm)) is not the \(configuration.algorithm.rawValue) configured for \(configuration.name)"
            )
        }
        guard let kid = token.keyID, !kid.isEmpty else { throw AuthGateError(.missingKeyID, "the token header has no kid") }
        let key = try await keySet.key(for: kid)
        let signedDigest = SHA256.hash(data: token.signedBytes)
        guard key.isValidSignature(token.signature, for: token.signedBytes, sha256: signedDigest) else {
            throw AuthGateError(.badSignature, "the signature does not verify with \(configuration.name) key \(ProviderKeySet.printable(kid))")
        }
        let claims = try token.verifiedClaims()
        // Byte for byte (`ByteExactString`): Swift's `==` on strings would let a canonically
        // equivalent spelling of an issuer or an audience (U+212A KELVIN SIGN for `K`) through.
        guard let issuer = claims["iss"]?.stringValue, configuration.issuers.containsBytes(of: issuer) else {
            throw AuthGateError(.issuer, "iss \(claims["iss"].map { "\($0)" } ?? "missing") is not an issuer of \(configuration.name)")
        }
        let leeway = configuration.leeway.inSeconds
        let current = now.timeIntervalSince1970
        guard let expiry = claims["exp"]?.integerValue else { throw AuthGateError(.expired, "the token has no exp") }
        guard current < Double(expiry) + leeway else {
            throw AuthGateError(.expired, "the token expired at \(expiry) (now \(now.unixSeconds), leeway \(Int(leeway)) s)")
        }
        // A provider's token lives minutes or hours; one claiming to live longer than
        // `maximumLifetime` is refused (its single-use record would be kept for as long).
        guard Double(expiry) <= current + Self.maximumLifetime else {
            throw AuthGateError(.malformed, "the token's exp \(expiry) is more than \(Int(Self.maximumLifetime / 86_400)) days ahead")
        }
        // nbf and iat are the provider's clock against ours: a small skew is allowed (clock_skew).
        let skew = max(configuration.clockSkew.inSeconds, leeway)
        if let notBefore = claims["nbf"] {
            guard let value = notBefore.integerValue else { throw AuthGateError(.malformed, "nbf is not a number") }
            guard Double(value) <= current + skew else { throw AuthGateError(.notYetValid, "the token is not valid before \(value)") }
        }
        var issuedAt: Date?
        if let issued = claims["iat"] {
            guard let value = issued.integerValue else { throw AuthGateError(.malformed, "iat is not a number") }
            guard Double(value) <= current + skew else { throw AuthGateError(.issuedInFuture, "the token was issued in the future (\(value))") }
            issuedAt = Date(timeIntervalSince1970: Double(value))
        }
        try AccessTokenHashRule.check(accessToken: accessToken, claim: claims["at_hash"], algorithm: configuration.algorithm)
        let subject = claims["sub"]?.stringValue ?? ""
        if purpose == .signIn, subject.isEmpty {
            throw AuthGateError(.missingSubject, "Missing sub claim in id_token")
        }
        let audiences = Self.audiences(in: claims)
        guard audiences.contains(where: { configuration.audiences.containsBytes(of: $0) }) else {
            throw AuthGateError(
                .audience, "aud \(audiences) names none of \(configuration.name)'s audiences", clientText: .unacceptableAudience(audiences))
        }
        if purpose == .signIn, !configuration.skipNonceCheck {
            try NonceRule.check(rawNonce: rawNonce, claim: claims["nonce"]?.stringValue)
        }
        return Verified(
            claims: claims,
            subject: subject,
            issuer: issuer,
            expiresAt: Date(timeIntervalSince1970: Double(expiry)),
            issuedAt: issuedAt,
            tokenHash: Self.replayKey(signedDigest: signedDigest)
        )
    }

    /// A token's `aud`: one string or a list of them (anything else names none).
    static func audiences(in claims: [String: JSONValue]) -> [String] {
        switch claims["aud"] {
        case .string(let audience): [audience]
        case .array(let values): values.compactMap(\.stringValue)
        default: []
        }
    }
}
