public import AuthGateCore
import NIOCore
public import NIOSSL
import Synchronization

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The TLS context the listener hands each new connection (`server.tls`), replaceable while the
/// gateway runs: ``reload()`` loads the files again and puts the new context in force for new
/// connections; connections already open finish on the one they started with.
public final class ServerTLSContext: Sendable {
    /// A loaded certificate chain and key.
    public struct Loaded: Sendable {
        public let context: NIOSSLContext
        /// The leaf certificate's `notAfter`.
        public let notValidAfter: Date
    }

    public let configuration: ServerTLSConfiguration
    /// The protocols offered with ALPN, preferred first: `h2` and `http/1.1`, or `http/1.1` alone.
    public let applicationProtocols: [String]
    private let current: Mutex<Loaded>

    /// Loads the files.
    /// - Parameter http2: offer `h2` (before `http/1.1`) with ALPN.
    /// - Throws: ``AuthGateError`` naming the file: unreadable, not PEM, an expired certificate,
    ///   a key that does not match the certificate.
    public init(configuration: ServerTLSConfiguration, http2: Bool, now: Date = Date()) throws {
        self.configuration = configuration
        self.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        self.current = Mutex(try Self.load(configuration, applicationProtocols: applicationProtocols, now: now))
    }

    /// The context for a new connection.
    public var context: NIOSSLContext { current.withLock { $0.context } }
    /// When the certificate in force expires.
    public var notValidAfter: Date { current.withLock { $0.notValidAfter } }

    /// Loads the files again and puts them in force; throws (and keeps the current ones) when
    /// they do not load.
    @discardableResult
    public func reload(now: Date = Date()) throws -> Loaded {
        let loaded = try Self.load(configuration, applicationProtocols: applicationProtocols, now: now)
        current.withLock { $0 = loaded }
        return loaded
    }

    /// Loads and checks `configuration`'s files into a server context: TLS 1.2 or 1.3 at least,
    /// NIOSSL's modern cipher suites (ECDHE with AES-GCM or ChaCha20-Poly1305), ALPN
    /// `applicationProtocols`, client certificates verified against `client_ca_file` when set.
    public static func load(_ configuration: ServerTLSConfiguration, applicationProtocols: [String], now: Date) throws -> Loaded {
        let chainFile = configuration.certificateChainFile
        let keyFile = configuration.privateKeyFile
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(chainFile)
        } catch {
            throw AuthGateError(.keyUnreadable, "server.tls.certificate_chain_file \"\(chainFile)\" is not a PEM certificate chain")
        }
        guard let leaf = chain.first else {
            throw AuthGateError(.keyUnreadable, "server.tls.certificate_chain_file \"\(chainFile)\" holds no certificate")
        }
        let notValidAfter = Date(timeIntervalSince1970: Double(leaf.notValidAfter))
        guard notValidAfter > now else {
            throw AuthGateError(.keyInvalid, "server.tls.certificate_chain_file \"\(chainFile)\": the certificate expired at \(notValidAfter)")
        }
        guard let pemData = FileManager.default.contents(atPath: keyFile) else {
            throw AuthGateError(.keyUnreadable, "server.tls.private_key_file \"\(keyFile)\" cannot be read")
        }
        let pem = String(decoding: pemData, as: UTF8.self)
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(pemData), format: .pem)
        } catch {
            throw AuthGateError(.keyInvalid, "server.tls.private_key_file \"\(keyFile)\" is not a PEM private key")
        }
        guard let keyInfo = ServerTLSConfiguration.publicKeyInfo(ofPrivateKeyPEM: pem),
            let certificateInfo = try? leaf.extractPublicKey().toSPKIBytes(), keyInfo == certificateInfo
        else {
            throw AuthGateError(
                .keyInvalid, "server.tls.private_key_file \"\(keyFile)\" does not match the certificate in \"\(chainFile)\"")
        }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = configuration.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        tls.applicationProtocols = applicationProtocols
        // A closing connection waits this long for the client's close_notify: an idle client that
        // is not reading never sends it, and the drain at shutdown would wait out NIOSSL's 5 s.
        tls.shutdownTimeout = .seconds(1)
        if let clientCA = configuration.clientCAFile {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .file(clientCA)
        }
        do {
            return Loaded(context: try NIOSSLContext(configuration: tls), notValidAfter: notValidAfter)
        } catch {
            throw AuthGateError(.keyInvalid, "server.tls: the certificate and key in \"\(chainFile)\", \"\(keyFile)\" do not make a TLS context")
        }
    }
}
