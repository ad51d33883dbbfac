import Yams

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The whole configuration, built once at start from a YAML file plus `AUTHGATE_…` environment
/// overrides, validated, and passed down. See `docs/configuration.md` for every key.
///
/// ```swift
/// let configuration = try AuthGateConfiguration.load(path: "config/authgate.yaml", environment: ProcessInfo.processInfo.environment)
/// ```
public struct AuthGateConfiguration: Sendable {
    public var server: ServerConfiguration
    public var store: StoreConfiguration
    public var tokens: TokensConfiguration
    public var providers: ProvidersConfiguration
    public var replay: ReplayConfiguration
    public var rateLimits: RateLimitsConfiguration
    public var users: UsersConfiguration
    public var security: SecurityConfiguration
    /// `browser_flow:`: `/authorize`, `/callback` and the PKCE grant.
    public var browserFlow: BrowserFlowConfiguration
    public var routes: [RouteConfiguration]
    public var proxy: ProxyConfiguration
    public var logging: LoggingConfiguration
    public var tracing: TracingConfiguration
    /// The file this came from, or nil for the built-in defaults.
    public var sourcePath: String?
    /// The `AUTHGATE_…` variables that changed a value, sorted.
    public var appliedEnvironmentOverrides: [String]

    /// True when the gateway runs without configured signing keys on the memory store: it then
    /// generates a throwaway key at start and keeps nothing across restarts.
    public var isDevelopmentMode: Bool { tokens.signingKeys.isEmpty && store.kind == .memory }

    /// Loads and validates a configuration file, applying environment overrides.
    /// - Parameters:
    ///   - path: the YAML file; nil for the built-in defaults (memory store, development key).
    ///   - environment: the process environment (only `AUTHGATE_…` variables are read).
    /// - Throws: ``ConfigurationError`` listing every problem found.
    public static func load(path: String?, environment: [String: String]) throws(ConfigurationError) -> AuthGateConfiguration {
        guard let path else { return try parse(yaml: "", baseDirectory: "", environment: environment, sourcePath: nil) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: "--config", message: "cannot read the configuration file \"\(path)\"")
        }
        let directory = path.contains("/") ? String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) : "."
        return try parse(yaml: String(decoding: data, as: UTF8.self), baseDirectory: directory, environment: environment, sourcePath: path)
    }

    /// Parses and validates configuration text.
    /// - Parameter baseDirectory: where relative file paths (keys, JWKS files) are resolved from.
    public static func parse(
        yaml: String,
        baseDirectory: String,
        environment: [String: String],
        sourcePath: String? = nil
    ) throws(ConfigurationError) -> AuthGateConfiguration {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw ConfigurationError(key: sourcePath ?? "(configuration)", message: "not valid YAML: \(error)")
        } catch {
            throw ConfigurationError(key: sourcePath ?? "(configuration)", message: "not valid YAML: \(error)")
        }
        let reader = ConfigurationReader(environment: environment, baseDirectory: baseDirectory)
        let root = reader.root(node)
        let server = ServerConfiguration(reading: root.section("server"))
        let store = StoreConfiguration(reading: root.section("store"), secrets: SecretReader())
        let tokens = TokensConfiguration(reading: root.section("tokens"), defaultIssuer: server.publicURL + "/auth/v1")
        let providers = ProvidersConfiguration(reading: root.section("providers"))
        let replay = ReplayConfiguration(reading: root.section("replay"))
        let rateLimits = RateLimitsConfiguration(reading: root.section("rate_limits"))
        let users = UsersConfiguration(reading: root.section("users"))
        let security = SecurityConfiguration(reading: root.section("security"))
        let browserFlow = BrowserFlowConfiguration(reading: root.section("browser_flow"), publicURL: server.publicURL, providers: providers)
        let routes = root.sections("routes").map(RouteConfiguration.init(reading:))
        let proxy = ProxyConfiguration(reading: root.section("proxy"))
        let logging = LoggingConfiguration(reading: root.section("logging"))
        let tracing = TracingConfiguration(reading: root.section("tracing"))
        root.finish()

        var seenNames: Set<String> = []
        var seenMatches: Set<String> = []
        for (index, route) in routes.enumerated() {
            if !route.name.isEmpty, !seenNames.insert(route.name).inserted {
                reader.report(
                    ConfigurationPath.root.appending("routes").appending(index: index).appending("name"), "\"\(route.name)\" is used by another route"
                )
            }
            let match = "\(route.host ?? "*") \(route.pathPrefix) \(route.methods.sorted())"
            if !seenMatches.insert(match).inserted {
                reader.report(
                    ConfigurationPath.root.appending("routes").appending(index: index).appending("path_prefix"),
                    "\"\(route.pathPrefix)\" is already routed for the same host and methods"
                )
            }
        }
        if tokens.signingKeys.isEmpty, store.kind == .redis {
            reader.report(
                ConfigurationPath.root.appending("tokens").appending("signing_keys"),
                "with store.kind redis (production) at least one signing key is required; generate one with `authgate keys generate`"
            )
        }
        for (index, key) in tokens.signingKeys.enumerated() where !key.file.isEmpty && !FileManager.default.isReadableFile(atPath: key.file) {
            reader.report(
                ConfigurationPath.root.appending("tokens").appending("signing_keys").appending(index: index).appending("file"),
                "cannot read \"\(key.file)\""
            )
        }
        for provider in providers.enabledIDTokenProviders {
            if case .file(let file) = provider.keySource, !FileManager.default.isReadableFile(atPath: file) {
                reader.report(
                    ConfigurationPath.root.appending("providers").appending(provider.name).appending("jwks_file"), "cannot read \"\(file)\"")
            }
        }
        guard reader.issues.isEmpty else { throw ConfigurationError(issues: reader.issues) }
        return AuthGateConfiguration(
            server: server,
            store: store,
            tokens: tokens,
            providers: providers,
            replay: replay,
            rateLimits: rateLimits,
            users: users,
            security: security,
            browserFlow: browserFlow,
            routes: routes,
            proxy: proxy,
            logging: logging,
            tracing: tracing,
            sourcePath: sourcePath,
            appliedEnvironmentOverrides: reader.appliedOverrides.sorted()
        )
    }
}
