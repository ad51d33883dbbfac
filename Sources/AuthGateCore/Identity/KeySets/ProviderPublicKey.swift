import Crypto
import _CryptoExtras

/// One provider signing key, bound at parse time to the single algorithm our configuration allows.
///
/// Verification goes straight to swift-crypto: no key collection, no default key, no algorithm
/// taken from a token header, and no actor to queue behind, so verifications for one provider
/// run in parallel on every core.
struct ProviderPublicKey: Sendable {
    private enum Material: Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
    }

    let kid: String
    let algorithm: ProvidersConfiguration.VerificationAlgorithm
    private let material: Material

    /// An RSA key from its base64url modulus and exponent (at least 2048 bits).
    init(kid: String, algorithm: ProvidersConfiguration.VerificationAlgorithm, modulus: [UInt8], exponent: [UInt8]) throws {
        self.kid = kid
        self.algorithm = algorithm
        self.material = .rsa(try _RSA.Signing.PublicKey(n: modulus, e: exponent))
    }

    /// An EC key from its base64url coordinates.
    init(kid: String, algorithm: ProvidersConfiguration.VerificationAlgorithm, x: [UInt8], y: [UInt8]) throws {
        self.kid = kid
        self.algorithm = algorithm
        switch algorithm {
        case .es256: self.material = .p256(try P256.Signing.PublicKey(rawRepresentation: x + y))
        case .es384: self.material = .p384(try P384.Signing.PublicKey(rawRepresentation: x + y))
        default: throw AuthGateError(.keysUnavailable, "an EC key cannot verify \(algorithm.rawValue)")
        }
    }

    /// True when `signature` signs `signedBytes` (the ASCII `header.payload`) under this key.
    /// `sha256` is `signedBytes`' SHA-256, which the caller has already computed (the ID token's
    /// single-use key is that digest): RS256 and ES256 sign it, so it is not hashed twice.
    func isValidSignature(_ signature: [UInt8], for signedBytes: [UInt8], sha256: SHA256Digest) -> Bool {
        switch (material, algorithm) {
        case (.rsa(let key), .rs256):
            return key.isValidSignature(.init(rawRepresentation: signature), for: sha256, padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .rs384):
            return key.isValidSignature(.init(rawRepresentation: signature), for: SHA384.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .rs512):
            return key.isValidSignature(.init(rawRepresentation: signature), for: SHA512.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        case (.p256(let key), .es256):
            guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: sha256)
        case (.p384(let key), .es384):
            guard let parsed = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: SHA384.hash(data: signedBytes))
        default:
            return false
        }
    }
}
