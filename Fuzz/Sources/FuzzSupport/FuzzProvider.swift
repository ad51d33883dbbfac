import AuthGateCore
import Crypto
import Foundation
import Logging

/// A provider the fuzz targets sign for: one fixed ES256 key (so that committed seeds stay
/// valid), published as a JWKS file with `kid` `fuzz-key`, and a pinned clock.
public enum FuzzProvider {
    /// The `kid` of ``privateKey`` in the published set.
    public static let keyID = "fuzz-key"
    /// The issuer and audience the fuzz configuration accepts.
    public static let issuer = "https://issuer.fuzz.example"
    public static let audience = "fuzz-audience"
    /// The pinned clock: 2023-11-14T22:13:20Z.
    public static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// A fixed P-256 key (its scalar is SHA-256 of a constant string), never used anywhere else.
    public static let privateKey: P256.Signing.PrivateKey = {
        let scalar = Array(SHA256.hash(data: Array("authgate fuzz provider key".utf8)))
        do {
            return try P256.Signing.PrivateKey(rawRepresentation: scalar)
        } catch {
            fatalError("the fixed fuzz key is not a valid P-256 scalar: \(error)")
        }
    }()

    /// ``privateKey`` in PEM, for targets that configure it as a signing key.
    public static var privateKeyPEM: String { privateKey.pemRepresentation }

    /// Another key, published nowhere: tokens it signs must never verify.
    public static let strangerKey = P256.Signing.PrivateKey()

    /// The JWKS document publishing ``privateKey``.
    public static var keySetDocument: String {
        let point = privateKey.publicKey.rawRepresentation
        let x = Base64URL.encode(point.prefix(32))
        let y = Base64URL.encode(point.suffix(32))
        return #"{"keys":[{"kty":"EC","crv":"P-256","kid":"\#(keyID)","use":"sig","alg":"ES256","x":"\#(x)","y":"\#(y)"}]}"#
    }

    /// ``keySetDocument`` written once to a temporary file, removed when the fuzzer exits.
    public static let keySetFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-fuzz-jwks-\(getpid()).json").path
        FileManager.default.createFile(atPath: path, contents: Data(keySetDocument.utf8))
        atexit { try? FileManager.default.removeItem(atPath: FuzzProvider.keySetFile) }
        return path
    }()

    /// A key set reading ``keySetFile`` for the ES256 provider `name`.
    public static func keySet(provider name: String) -> ProviderKeySet {
        ProviderKeySet(provider: name, source: .file(keySetFile), algorithm: .es256, fetcher: NoNetwork(), logger: quietLogger)
    }

    /// The compact JWS of `header` and `payload` (raw bytes, base64url-encoded here) signed with `key`.
    public static func sign(header: [UInt8], payload: [UInt8], with key: P256.Signing.PrivateKey = privateKey) -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let signature = (try? key.signature(for: Array(signingInput.utf8)).rawRepresentation).map(Array.init) ?? []
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Whether `token`'s signature verifies with ``privateKey``'s public key, checked here with
    /// swift-crypto directly rather than through the gateway's code.
    public static func hasValidSignature(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = Base64URL.decode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw)
        else { return false }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        return privateKey.publicKey.isValidSignature(signature, for: SHA256.hash(data: signingInput))
    }

    /// A logger that prints nothing: the targets run millions of inputs.
    public static let quietLogger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A fetcher for key sets that must come from files: any network fetch is refused.
public struct NoNetwork: JWKSFetching {
    public init() {}
    public func fetch(_ url: String) async throws -> FetchedDocument {
        throw AuthGateError(.keysUnavailable, "the fuzz targets read key sets from files only")
    }
}
