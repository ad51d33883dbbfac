import RedisBridge

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension TLSClientConfiguration {
    /// Reads a client TLS section (`store.redis.tls`, a route's `tls`): `ca_file`, `server_name`,
    /// `certificate_chain_file` and `private_key_file`, paths resolved against the configuration's
    /// directory, then loads them once so that a file that is not PEM, or a key without its
    /// certificate, is reported at start and by `check-config`, naming the file.
    static func read(_ section: ConfigurationSection) -> TLSClientConfiguration {
        var tls = TLSClientConfiguration()
        tls.caFile = section.readableFile("ca_file")
        tls.serverName = section.optionalString("server_name")
        tls.certificateChainFile = section.readableFile("certificate_chain_file")
        tls.privateKeyFile = section.readableFile("private_key_file")
        if let name = tls.serverName,
            name.isEmpty || name.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) || TLSClientConfiguration.isIPAddress(name)
        {
            section.report("server_name", "\"\(name)\" is not a DNS name (leave it out to check the host's IP address)")
        }
        section.finish()
        let files = [tls.caFile, tls.certificateChainFile, tls.privateKeyFile].compactMap { $0 }
        guard files.allSatisfy({ FileManager.default.isReadableFile(atPath: $0) }) else { return tls }
        do {
            _ = try tls.makeContext()
        } catch {
            switch error.setting {
            case .caFile: section.report("ca_file", error.description)
            case .certificateChainFile: section.report("certificate_chain_file", error.description)
            case .privateKeyFile: section.report("private_key_file", error.description)
            }
        }
        return tls
    }
}
