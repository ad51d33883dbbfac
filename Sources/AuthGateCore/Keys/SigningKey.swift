import _CryptoExtras
public import JWTKit

/// One of AuthGate's own signing keys: its private half, its `kid`, its algorithm and its state
/// in rotation.
public struct SigningKey: Sendable {
    /// The private key material, by algorithm.
    public enum PrivateKey: Sendable {
        case es256(ES256PrivateKey)
        case rs256(JWTKit.Insecure.RSA.PrivateKey)
    }

    public let kid: String
    public let algorithm: TokensConfiguration.SigningAlgorithm
    public let state: TokensConfiguration.KeyState
    public let privateKey: PrivateKey

    public init(kid: String, state: TokensConfiguration.KeyState, privateKey: PrivateKey) {
        self.kid = kid
        self.state = state
        self.privateKey = privateKey
        switch privateKey {
        case .es256: self.algorithm = .es256
        case .rs256: self.algorithm = .rs256
        }
    }

    /// Parses a PEM private key of the given algorithm.
    /// - Throws: ``AuthGateError`` when the PEM is not a private key of that algorithm.
    public static func parse(pem: String, kid: String, algorithm: TokensConfiguration.SigningAlgorithm, state: TokensConfiguration.KeyState) throws
        -> SigningKey
    {
        do {
            switch algorithm {
            case .es256:
                return SigningKey(kid: kid, state: state, privateKey: .es256(try ES256PrivateKey(pem: pem)))
            case .rs256:
                let key = try JWTKit.Insecure.RSA.PrivateKey(pem: pem)
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
            return SigningKey(kid: kid, state: state, privateKey: .es256(ES256PrivateKey()))
        case .rs256:
            do {
                return SigningKey(kid: kid, state: state, privateKey: .rs256(try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))))
            } catch {
                throw AuthGateError(.keyInvalid, "could not generate an RSA key: \(error)")
            }
        }
    }

    /// The private key as PEM, for `authgate keys generate`.
    public var pemRepresentation: String {
        switch privateKey {
        case .es256(let key): return key.pemRepresentation
        case .rs256(let key): return key.pemRepresentation
        }
    }
}
