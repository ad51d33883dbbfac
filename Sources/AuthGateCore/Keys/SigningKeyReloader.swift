public import Logging
public import ServiceLifecycle

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reloads the signing keys while the gateway runs: on SIGHUP, and when the configuration file
/// or a key file changes (checked every `pollInterval`). The new `tokens.signing_keys` (files and
/// states) replaces the ring in force at once, without dropping a connection; a set that does not
/// load (a missing file, no active key) is refused and the keys in force stay. Only the keys are
/// reloaded: other configuration changes need a restart.
public struct SigningKeyReloader: Service {
    private let keys: SigningKeys
    private let configurationPath: String
    private let environment: [String: String]
    private let pollInterval: Duration
    private let logger: Logger
    private let watched: WatchedKeyFiles

    public init(keys: SigningKeys, configurationPath: String, environment: [String: String], pollInterval: Duration = .seconds(2), logger: Logger) {
        self.keys = keys
        self.configurationPath = configurationPath
        self.environment = environment
        self.pollInterval = pollInterval
        self.logger = logger
        self.watched = WatchedKeyFiles(configurationPath: configurationPath) { path in
            (try? AuthGateConfiguration.load(path: path, environment: environment))?.tokens.signingKeys.map(\.file)
        }
    }

    public func run() async throws {
        try await ReloadTrigger.run(pollInterval: pollInterval, paths: { [watched] in watched.paths() }) { [self] reason in
            reload(because: reason == "files changed" ? "key files changed" : reason)
        }
    }

    /// Loads the configured keys and puts them in force; keeps the current ones when that fails.
    func reload(because reason: String) {
        do {
            let configuration = try AuthGateConfiguration.load(path: configurationPath, environment: environment)
            let ring = try SigningKeyRing.load(configuration.tokens, allowGenerated: false)
            keys.replace(with: ring)
            logger.notice(
                "signing keys reloaded",
                metadata: ["gw.reason": "\(reason)", "gw.keys": "\(ring.keys.map { "\($0.kid):\($0.state.rawValue)" }.joined(separator: ","))"]
            )
        } catch {
            logger.error("signing keys not reloaded; the keys in force stay", metadata: ["gw.reason": "\(reason)", "gw.error": "\(error)"])
        }
    }
}
