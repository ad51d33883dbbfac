import Synchronization

/// The files ``SigningKeyReloader`` watches: the configuration file and the key files it names.
/// The key files are read from the configuration again only when the configuration file itself
/// changed (its ``ReloadTrigger/fingerprint(_:)``), not on every check. Parsing the whole YAML on
/// every check was 85% of an idle gateway's allocations (20,332 in 20 s, 3,102 without it) for an
/// answer that changes only when an operator edits the file.
final class WatchedKeyFiles: Sendable {
    private let configurationPath: String
    private let keyFiles: @Sendable (String) -> [String]?
    /// The configuration's fingerprint when its key files were last read, and the paths then.
    private let cache = Mutex<(configuration: [String], paths: [String])?>(nil)

    /// - Parameter keyFiles: the key files the configuration at a path names; nil when it does
    ///   not load (then only the configuration file is watched, and it is read again next time).
    init(configurationPath: String, keyFiles: @escaping @Sendable (String) -> [String]?) {
        self.configurationPath = configurationPath
        self.keyFiles = keyFiles
    }

    /// The configuration file, then the key files it names.
    func paths() -> [String] {
        let configuration = ReloadTrigger.fingerprint([configurationPath])
        if let cached = cache.withLock({ $0 }), cached.configuration == configuration { return cached.paths }
        guard let files = keyFiles(configurationPath) else { return [configurationPath] }
        let paths = [configurationPath] + files
        cache.withLock { $0 = (configuration, paths) }
        return paths
    }
}
