public import Crypto
public import _CryptoExtras

/// One of AuthGate's own signing keys: its private half, its `kid`, its algorithm and its state
/// in rotation. Signing and verifying go straight to swift-crypto (no shared actor), so every
/// core can mint and check tokens at once.
public struct SigningKey: Sendable {
    /// The private key material, by algorithm.
    public enum PrivateKey: Sendable {
        case es256(P256.Signing.PrivateKey)
        case rs256(_RSA.Signing.PrivateKey)
    }

    public let kid: String
    public let algorithm: TokensConfiguration.SigningAlgorithm
    public let state: TokensConfiguration.KeyState
    public let privateKey: PrivateKey
    /// The base64url header of every access token this key signs,
    /// `{"alg":…,"kid":…,"typ":"JWT"}`: written once, not per token.
    let tokenHeader: String

    public init(kid: String, state: TokensConfiguration.KeyState, privateKey: PrivateKey) {
        self.kid = kid
        self.state = state
        self.privateKey = privateKey
        let algorithm: TokensConfiguration.SigningAlgorithm
        switch privateKey {
        case .es256: algorithm = .es256
        case .rs256: algorithm = .rs256
        }
        self.algorithm = algorithm
        var header = JSONObjectWriter()
        header.string("alg", algorithm.rawValue)
        header.string("kid", kid)
        header.string("typ", "JWT")
        self.tokenHeader = Base64URL.encode(header.finished())
    }

    /// Parses a PEM private key (PKCS#8, or SEC1 / PKCS#1) of the given algorithm.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/keyInvalid`` when the PEM is not a private key of that algorithm.
    public static func parse(pem: String, kid: String, algorithm: TokensConfiguration.SigningAlgorithm, state: TokensConfiguration.KeyState) throws
        -> SigningKey
    {
        do {
            switch algorithm {
            case .es256:
                return SigningKey(kid: kid, state: state, privateKey: .es256(try P256.Signing.PrivateKey(pemRepresentation: pem)))
            case .rs256:
                let key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
                guard key.keySizeInBits >= 2048 else { throw AuthGateError(.keyInvalid, "RSA keys need at least 2048 bits") }
                return SigningKey(kid: kid, state: state, privateKey: .rs256(key))
            }
        } catch {
            throw AuthGateError(.keyInvalid, "key \"\(kid)\" is not a valid \(algorithm.rawValue) private key in PEM form")
        }
    }

    /// A new random key (ES256 on P-256, or RS256 with a 2048-bit modulus).
    public static func generate(kid: String, algorithm: TokensConfiguration.SigningAlgorithm, state: TokensConfiguration.KeyState = .active) throws
        -> SigningKey
    {
        switch algorithm {
        case .es256:
            return SigningKey(kid: kid, state: state, privateKey: .es256(P256.Signing.PrivateKey()))
        case .rs256:
            do {
                return SigningKey(kid: kid, state: state, privateKey: .rs256(try _RSA.Signing.PrivateKey(keySize: .bits2048)))
            } catch {
                throw AuthGateError(.keyInvalid, "could not generate an RSA key: \(error)")
            }
        }
    }

    /// The private key as PKCS#8 PEM, for `authgate keys generate`.
    public var pemRepresentation: String {
        switch privateKey {
        case .es256(let key): return key.pemRepresentation
        case .rs256(let key): return key.pemRepresentation
        }
    }

    /// A compact JWS (`header.payload.signature`, each part base64url) of the given header and
    /// payload JSON, signed with this key: Apple's client secrets.
    func compactJWS(header: [UInt8], payload: [UInt8]) throws -> String {
        try compactJWS(encodedHeader: Base64URL.encode(header), payload: payload)
    }

    /// ``compactJWS(header:payload:)`` with the header already in base64url (an access token's is
    /// the same for every token of a key: ``tokenHeader``). The token is written into one string
    /// sized for it, and the signing input is hashed where it lies in that string.
    func compactJWS(encodedHeader: String, payload: [UInt8]) throws -> String {
        var token = encodedHeader
        let signatureLength = algorithm == .es256 ? 86 : 342
        token.reserveCapacity(encodedHeader.utf8.count + 2 + (payload.count * 4 + 2) / 3 + signatureLength)
        token.append(".")
        token.append(Base64URL.encode(payload))
        var hasher = SHA256()
        hasher.update(utf8: token)
        token.append(".")
        token.append(Base64URL.encode(try sign(digest: hasher.finalize())))
        return token
    }

    /// The JWS signature bytes over a signing input's SHA-256 `digest`.
    func sign(digest: SHA256.Digest) throws -> [UInt8] {
        switch privateKey {
        case .es256(let key):
            // Low s: one spelling per token (see ECDSALowS).
            return ECDSALowS.normalized(Array(try key.signature(for: digest).rawRepresentation), order: ECDSALowS.p256Order)
        case .rs256(let key):
            return Array(try key.signature(for: digest, padding: .insecurePKCS1v1_5).rawRepresentation)
        }
    }

    /// True when `signature` is this key's signature over `bytes`, in its one canonical form (an
    /// ECDSA signature with a high `s` is refused: AuthGate never issues one).
    func isValidSignature(_ signature: [UInt8], for bytes: [UInt8]) -> Bool {
        switch privateKey {
        case .es256(let key):
            guard ECDSALowS.isLow(signature, order: ECDSALowS.p256Order), let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return key.publicKey.isValidSignature(parsed, for: SHA256.hash(data: bytes))
        case .rs256(let key):
            return key.publicKey.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5)
        }
    }

    /// The public JWK GoTrue publishes: key material plus `kid`, `alg`, `use: sig`, `key_ops: [verify]`.
    public var publicJWK: [String: JSONValue] {
        var jwk: [String: JSONValue] = [
            "kid": .string(kid), "alg": .string(algorithm.rawValue), "use": "sig", "key_ops": .array(["verify"])
        ]
        switch privateKey {
        case .es256(let key):
            let raw = Array(key.publicKey.rawRepresentation)
            jwk["kty"] = "EC"
            jwk["crv"] = "P-256"
            jwk["x"] = .string(Base64URL.encode(Array(raw[0..<32])))
            jwk["y"] = .string(Base64URL.encode(Array(raw[32..<64])))
        case .rs256(let key):
            if let primitives = try? key.publicKey.getKeyPrimitives() {
                jwk["kty"] = "RSA"
                jwk["n"] = .string(Base64URL.encode(Array(primitives.modulus)))
                jwk["e"] = .string(Base64URL.encode(Array(primitives.publicExponent)))
            }
        }
        return jwk
    }
}
