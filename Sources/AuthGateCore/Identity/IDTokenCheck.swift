#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto

/// The checks every ID-token provider shares, in GoTrue's order: signature (by `kid`, with the
/// configured algorithm), issuer, expiry, `nbf`/`iat`, `sub`, audience, nonce.
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

    func run(idToken: String, rawNonce: String?, now: Date) async throws -> Verified {
        let token = try CompactJWT(parsing: idToken)
        guard token.algorithm == configuration.algorithm.rawValue else {
            throw AuthGateError(
                .algorithmNotAllowed,
                "alg \(ProviderKeySet.printable(token.algorithm)) is not the \(configuration.algorithm.rawValue) configured for \(configuration.name)"
            )
        }
        guard let kid = token.keyID, !kid.isEmpty else { throw AuthGateError(.missingKeyID, "the token header has no kid") }
        let key = try await keySet.key(for: kid)
        guard key.isValidSignature(token.signature, for: token.signedBytes) else {
            throw AuthGateError(.badSignature, "the signature does not verify with \(configuration.name) key \(ProviderKeySet.printable(kid))")
        }
        let claims = try token.verifiedClaims()
        guard let issuer = claims["iss"]?.stringValue, configuration.issuers.contains(issuer) else {
            throw AuthGateError(.issuer, "iss \(claims["iss"].map { "\($0)" } ?? "missing") is not an issuer of \(configuration.name)")
        }
        let leeway = configuration.leeway.inSeconds
        let current = now.timeIntervalSince1970
        guard let expiry = claims["exp"]?.integerValue else { throw AuthGateError(.expired, "the token has no exp") }
        guard current < Double(expiry) + leeway else {
            throw AuthGateError(.expired, "the token expired at \(expiry) (now \(Int64(current)), leeway \(Int(leeway)) s)")
        }
        if let notBefore = claims["nbf"] {
            guard let value = notBefore.integerValue else { throw AuthGateError(.malformed, "nbf is not a number") }
            guard Double(value) <= current + leeway else { throw AuthGateError(.notYetValid, "the token is not valid before \(value)") }
        }
        var issuedAt: Date?
        if let issued = claims["iat"] {
            guard let value = issued.integerValue else { throw AuthGateError(.malformed, "iat is not a number") }
            guard Double(value) <= current + leeway else { throw AuthGateError(.issuedInFuture, "the token was issued in the future (\(value))") }
            issuedAt = Date(timeIntervalSince1970: Double(value))
        }
        let subject = claims["sub"]?.stringValue ?? ""
        if purpose == .signIn, subject.isEmpty {
            throw AuthGateError(.missingSubject, "Missing sub claim in id_token")
        }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let audience): audiences = [audience]
        case .array(let values): audiences = values.compactMap(\.stringValue)
        default: audiences = []
        }
        guard audiences.contains(where: { configuration.audiences.contains($0) }) else {
            throw AuthGateError(.audience, "Unacceptable audience in id_token: [\(audiences.joined(separator: " "))]")
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
            tokenHash: NonceRule.hashed(idToken)
        )
    }
}
