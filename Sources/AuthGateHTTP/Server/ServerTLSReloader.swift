import AuthGateCore
public import Logging
public import ServiceLifecycle

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reloads the listener's certificate and key on SIGHUP and when their files change (a
/// `Service`): new connections get the new context at once, open ones finish on theirs. Files that
/// do not load (a half-written file, an expired certificate, a key that does not match) are
/// refused with a log line naming them, and the certificate in force stays.
public struct ServerTLSReloader: Service {
    private let tls: ServerTLSContext
    private let logger: Logger
    private let pollInterval: Duration

    public init(tls: ServerTLSContext, logger: Logger, pollInterval: Duration = .seconds(2)) {
        self.tls = tls
        self.logger = logger
        self.pollInterval = pollInterval
    }

    public func run() async throws {
        let configuration = tls.configuration
        let paths = [configuration.certificateChainFile, configuration.privateKeyFile] + (configuration.clientCAFile.map { [$0] } ?? [])
        try await ReloadTrigger.run(pollInterval: pollInterval, paths: { paths }) { [tls, logger] reason in
            do {
                let loaded = try tls.reload()
                GatewayMetrics.tlsCertificateExpiry(seconds: loaded.notValidAfter.timeIntervalSinceNow)
                logger.notice("TLS certificate reloaded", metadata: ["gw.reason": "\(reason)", "gw.not_after": "\(loaded.notValidAfter)"])
            } catch {
                logger.error("TLS certificate not reloaded; the one in force stays", metadata: ["gw.reason": "\(reason)", "gw.error": "\(error)"])
            }
        }
    }
}
