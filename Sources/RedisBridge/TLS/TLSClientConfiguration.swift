import NIOCore
public import NIOSSL

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How a client connection speaks TLS: which certificate authorities it trusts, the name it
/// expects the server's certificate to carry, and the certificate it shows (mutual TLS). Used for
/// `rediss://` connections and for the proxy's `https://` upstreams.
///
/// The server's certificate is always verified (chain and name); there is no setting that turns
/// verification off. The files are read by ``makeContext()``: a Redis client calls it for each
/// new connection (a rotated CA or client certificate is used from the next reconnect), the
/// proxy once per route at start.
public struct TLSClientConfiguration: Sendable, Hashable {
    /// PEM file of the CAs to trust, or nil for the system's roots.
    public var caFile: String?
    /// The name the server's certificate must carry (and the SNI sent), or nil for the host
    /// connected to (an IP address is then matched against the certificate's IP addresses).
    public var serverName: String?
    /// Client certificate chain (PEM, leaf first), shown when the server asks; set with ``privateKeyFile``.
    public var certificateChainFile: String?
    /// The client certificate's key (PEM).
    public var privateKeyFile: String?

    /// Creates a configuration; the defaults trust the system's roots and show no certificate.
    public init(caFile: String? = nil, serverName: String? = nil, certificateChainFile: String? = nil, privateKeyFile: String? = nil) {
        self.caFile = caFile
        self.serverName = serverName
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
    }

    /// A problem with the files, naming the file (never its contents).
    public struct FileError: Error, Sendable, CustomStringConvertible {
        /// Which setting the problem is in.
        public enum Setting: Sendable {
            case caFile, certificateChainFile, privateKeyFile
        }

        public let setting: Setting
        public let description: String
    }

    /// Reads the files into a TLS client context: TLS 1.2 or later, full verification.
    /// - Throws: ``FileError`` naming the file that is missing or not PEM.
    public func makeContext() throws(FileError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.certificateVerification = .fullVerification
        if let caFile {
            let roots: [NIOSSLCertificate]
            do {
                roots = try NIOSSLCertificate.fromPEMFile(caFile)
            } catch {
                throw FileError(setting: .caFile, description: "the CA file \"\(caFile)\" cannot be read as PEM certificates")
            }
            guard !roots.isEmpty else { throw FileError(setting: .caFile, description: "the CA file \"\(caFile)\" holds no certificate") }
            tls.trustRoots = .certificates(roots)
        }
        switch (certificateChainFile, privateKeyFile) {
        case (nil, nil):
            break
        case (let chainFile?, let keyFile?):
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMFile(chainFile)
            } catch {
                throw FileError(
                    setting: .certificateChainFile, description: "the client certificate file \"\(chainFile)\" cannot be read as PEM certificates")
            }
            guard !chain.isEmpty else {
                throw FileError(setting: .certificateChainFile, description: "the client certificate file \"\(chainFile)\" holds no certificate")
            }
            let key: NIOSSLPrivateKey
            do {
                key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
            } catch {
                throw FileError(setting: .privateKeyFile, description: "the client key file \"\(keyFile)\" cannot be read as a PEM private key")
            }
            tls.certificateChain = chain.map { .certificate($0) }
            tls.privateKey = .privateKey(key)
        case (.some, nil), (nil, .some):
            throw FileError(
                setting: certificateChainFile == nil ? .certificateChainFile : .privateKeyFile,
                description: "a client certificate needs both its certificate chain file and its private key file")
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw FileError(
                setting: .privateKeyFile, description: "the TLS settings do not make a client context (does the client key match its certificate?)")
        }
    }

    /// A client handler for a connection to `host`: SNI and name check against ``serverName`` or
    /// `host`; for an IP address without ``serverName``, no SNI and the certificate's IP addresses.
    public func makeHandler(context: NIOSSLContext, host: String) throws -> NIOSSLClientHandler {
        let name = serverName ?? (Self.isIPAddress(host) ? nil : host)
        return try NIOSSLClientHandler(context: context, serverHostname: name)
    }

    /// What went wrong in a handshake, for a log line or an error message: short, stable and
    /// free of library internals.
    public func describe(handshakeError error: any Error, host: String) -> String {
        let expected = serverName ?? host
        let trusted = caFile.map { "the CA file \"\($0)\"" } ?? "the system's trusted roots"
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the server's certificate is not for \(expected)"
        }
        if let sslError = error as? NIOSSLError {
            switch sslError {
            case .handshakeFailed(let detail):
                let text = "\(detail)"
                if text.contains("CERTIFICATE_VERIFY_FAILED") {
                    return "the server's certificate did not verify against \(trusted) for \(expected)"
                }
                if text.contains("WRONG_VERSION_NUMBER") || text.contains("PACKET_LENGTH_TOO_LONG") {
                    return "the server did not answer in TLS (is this its TLS port?)"
                }
                if text.contains("CERTIFICATE_REQUIRED") || text.contains("HANDSHAKE_FAILURE") || text.contains("ALERT") {
                    return "the server refused the handshake (does it require a client certificate this client does not have?)"
                }
                return "the TLS handshake failed"
            case .uncleanShutdown:
                return "the server closed the connection during the TLS handshake"
            default:
                return "the TLS handshake failed"
            }
        }
        if error is TLSHandshakeTimeout { return "the TLS handshake did not finish in time (does the server speak TLS on this port?)" }
        if let channelError = error as? ChannelError, channelError == .eof || channelError == .ioOnClosedChannel {
            return "the server closed the connection during the TLS handshake"
        }
        return "the TLS handshake failed"
    }

    /// An error of an established TLS session in words, without library internals; nil for an
    /// error that is not TLS's. (A TLS 1.3 server that wants a client certificate says so only
    /// after the handshake, on the first read.)
    public static func describe(sessionError error: any Error) -> String? {
        guard error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError else { return nil }
        if "\(error)".contains("CERTIFICATE_REQUIRED") { return "the server ended the TLS session: it requires a client certificate" }
        return "the TLS session failed"
    }

    /// An IPv4 or IPv6 literal, which may not be sent as SNI.
    public static func isIPAddress(_ host: String) -> Bool {
        host.contains(":")
            || (!host.isEmpty && host.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") })
    }
}

/// The handshake of a new TLS connection did not finish within the connect timeout.
public struct TLSHandshakeTimeout: Error, Sendable {}
