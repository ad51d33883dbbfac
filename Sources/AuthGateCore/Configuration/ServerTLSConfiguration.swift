import Crypto
import _CryptoExtras

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `server.tls`: TLS on the gateway's listener. Certificates and keys are PEM files; they are
/// reloaded on SIGHUP and when they change, without dropping a connection.
public struct ServerTLSConfiguration: Sendable, Hashable {
    /// The lowest protocol version offered.
    public enum MinimumVersion: String, Sendable, CaseIterable {
        case tls12 = "1.2"
        case tls13 = "1.3"
    }

    /// The certificate chain (leaf first), PEM.
    public var certificateChainFile: String
    /// The leaf's private key, PEM (a secret file).
    public var privateKeyFile: String
    /// With it, clients must present a certificate issued by one of these CAs (mutual TLS).
    public var clientCAFile: String?
    public var minimumVersion: MinimumVersion

    public init(certificateChainFile: String, privateKeyFile: String, clientCAFile: String?, minimumVersion: MinimumVersion) {
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        self.clientCAFile = clientCAFile
        self.minimumVersion = minimumVersion
    }

    /// Reads `server.tls` (present). Paths are resolved against the configuration's directory and
    /// must be readable; nil when a required one is missing (reported).
    static func read(_ section: ConfigurationSection) -> ServerTLSConfiguration? {
        let chain = section.readableFile("certificate_chain_file", required: "required with server.tls")
        let key = section.readableFile("private_key_file", required: "required with server.tls")
        let clientCA = section.readableFile("client_ca_file")
        let minimum: MinimumVersion = section.choice("minimum_version", default: .tls12)
        section.finish()
        guard let chain, let key else { return nil }
        return ServerTLSConfiguration(certificateChainFile: chain, privateKeyFile: key, clientCAFile: clientCA, minimumVersion: minimum)
    }

    /// The SubjectPublicKeyInfo (DER) of the private key in `pem` (P-256, P-384, P-521 or RSA), to
    /// compare with the certificate's: a key that does not match its certificate is refused at
    /// start, naming the files. Nil for a key of another kind.
    public static func publicKeyInfo(ofPrivateKeyPEM pem: String) -> [UInt8]? {
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return Array(key.publicKey.derRepresentation) }
        if let key = try? P384.Signing.PrivateKey(pemRepresentation: pem) { return Array(key.publicKey.derRepresentation) }
        if let key = try? P521.Signing.PrivateKey(pemRepresentation: pem) { return Array(key.publicKey.derRepresentation) }
        if let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) { return Array(key.publicKey.derRepresentation) }
        return nil
    }
}
