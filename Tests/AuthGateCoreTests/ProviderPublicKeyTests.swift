import Crypto
import Testing
import _CryptoExtras

@testable import AuthGateCore

/// A provider key verifies exactly the algorithm it was parsed for, each with its own hash: the
/// SHA-256 the ID token check computes once (for its single-use key) serves RS256 and ES256 only.
@Suite("Provider public keys: each configured algorithm with its own hash")
struct ProviderPublicKeyTests {
    private static let signedBytes = Array("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0".utf8)

    /// A key parsed from a one-key JWKS for `algorithm`.
    private func parsed(_ jwk: [String: JSONValue], _ algorithm: ProvidersConfiguration.VerificationAlgorithm) throws -> ProviderPublicKey {
        var jwk = jwk
        jwk["kid"] = "k"
        let document = JSONValue.object(["keys": .array([.object(jwk)])]).serialized()
        return try #require(try JWKSetParser.parse(document, algorithm: algorithm).keys["k"])
    }

    /// Whether `key` accepts `signature` over the test's signed bytes.
    private func verifies(_ key: ProviderPublicKey, _ signature: [UInt8]) -> Bool {
        key.isValidSignature(signature, for: Self.signedBytes, sha256: SHA256.hash(data: Self.signedBytes))
    }

    @Test("RS256, RS384 and RS512 each verify a signature over their own hash and refuse the others' and a changed byte")
    func rsa() throws {
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try privateKey.publicKey.getKeyPrimitives()
        let jwk: [String: JSONValue] = [
            "kty": "RSA", "n": .string(Base64URL.encode(Array(primitives.modulus))), "e": .string(Base64URL.encode(Array(primitives.publicExponent)))
        ]
        let signatures: [ProvidersConfiguration.VerificationAlgorithm: [UInt8]] = [
            .rs256: Array(try privateKey.signature(for: SHA256.hash(data: Self.signedBytes), padding: .insecurePKCS1v1_5).rawRepresentation),
            .rs384: Array(try privateKey.signature(for: SHA384.hash(data: Self.signedBytes), padding: .insecurePKCS1v1_5).rawRepresentation),
            .rs512: Array(try privateKey.signature(for: SHA512.hash(data: Self.signedBytes), padding: .insecurePKCS1v1_5).rawRepresentation)
        ]
        for (algorithm, signature) in signatures {
            let key = try parsed(jwk, algorithm)
            #expect(verifies(key, signature), "\(algorithm)")
            for (other, otherSignature) in signatures where other != algorithm {
                #expect(!verifies(key, otherSignature), "\(algorithm) key, \(other) signature")
            }
            var changed = signature
            changed[changed.count - 1] ^= 1
            #expect(!verifies(key, changed), "\(algorithm), changed byte")
        }
    }

    @Test("ES256 verifies over SHA-256 and ES384 over SHA-384; each refuses the other hash and a changed byte")
    func ecdsa() throws {
        let p256 = P256.Signing.PrivateKey()
        let p384 = P384.Signing.PrivateKey()
        let cases: [(ProvidersConfiguration.VerificationAlgorithm, String, [UInt8], [UInt8], wrongHash: [UInt8])] = [
            (
                .es256, "P-256", Array(p256.publicKey.rawRepresentation),
                Array(try p256.signature(for: SHA256.hash(data: Self.signedBytes)).rawRepresentation),
                wrongHash: Array(try p256.signature(for: SHA384.hash(data: Self.signedBytes)).rawRepresentation)
            ),
            (
                .es384, "P-384", Array(p384.publicKey.rawRepresentation),
                Array(try p384.signature(for: SHA384.hash(data: Self.signedBytes)).rawRepresentation),
                wrongHash: Array(try p384.signature(for: SHA256.hash(data: Self.signedBytes)).rawRepresentation)
            )
        ]
        for (algorithm, curve, point, signature, wrongHash) in cases {
            let half = point.count / 2
            let jwk: [String: JSONValue] = [
                "kty": "EC", "crv": .string(curve), "x": .string(Base64URL.encode(point[..<half])), "y": .string(Base64URL.encode(point[half...]))
            ]
            let key = try parsed(jwk, algorithm)
            #expect(verifies(key, signature), "\(algorithm)")
            #expect(!verifies(key, wrongHash), "\(algorithm), signature over another hash")
            var changed = signature
            changed[changed.count - 1] ^= 1
            #expect(!verifies(key, changed), "\(algorithm), changed byte")
        }
    }
}
