public import Logging

/// Every configured provider's verifier, looked up by the `provider` name of a request.
public struct IdentityVerifierRegistry: Sendable {
    private let verifiers: [String: any IdentityVerifier]
    /// Which provider an id_token grant's `provider` or `issuer` selects; also what a name that
    /// has no verifier is (unknown, or configured and off).
    public let resolution: IDTokenProviderResolution
    /// Anonymous sign-in.
    public let anonymous: AnonymousProvider

    /// The key sets of the enabled providers: run each as a `Service` to keep it fresh, and
    /// report them in `/readyz`.
    public var keySets: [ProviderKeySet] { verifiers.values.map(\.keySet) }

    /// Builds a verifier for every enabled provider in `providers`.
    /// - Parameter discovery: the discovery documents of providers configured by discovery (the
    ///   gateway's one cache, shared with the browser flow); one for these key sets when nil.
    public init(providers: ProvidersConfiguration, fetcher: any JWKSFetching, discovery: OIDCDiscovery? = nil, logger: Logger) {
        var verifiers: [String: any IdentityVerifier] = [:]
        let discovery = discovery ?? OIDCDiscovery(fetcher: fetcher)
        for configuration in [providers.apple, providers.google] + providers.oidc where configuration.enabled {
            let keySet = ProviderKeySet(
                provider: configuration.name,
                source: Self.source(of: configuration),
                algorithm: configuration.algorithm,
                fetcher: fetcher,
                discovery: discovery,
                logger: logger
            )
            verifiers[configuration.name] = Self.makeVerifier(configuration, keySet: keySet)
        }
        self.verifiers = verifiers
        self.resolution = IDTokenProviderResolution(providers)
        self.anonymous = AnonymousProvider(configuration: providers.anonymous)
    }

    /// Creates a registry from verifiers built elsewhere (tests, `authgate verify-id-token`).
    public init(verifiers: [any IdentityVerifier], anonymous: AnonymousProvider) {
        self.verifiers = Dictionary(verifiers.map { ($0.provider, $0) }, uniquingKeysWith: { first, _ in first })
        self.resolution = IDTokenProviderResolution(verifiers.map(\.configuration))
        self.anonymous = anonymous
    }

    /// `provider` as it may appear in logs, spans and metric labels: a configured provider's name,
    /// else `unknown` (the field comes from the client and may hold anything, a token included).
    public func label(for provider: String) -> String {
        resolution.isConfigured(provider) ? provider : "unknown"
    }

    /// The verifier for `provider`.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/providerDisabled`` or
    ///   ``AuthGateError/Code/unknownProvider``, as ``IDTokenProviderResolution`` refuses the name.
    public func verifier(for provider: String) throws -> any IdentityVerifier {
        if let verifier = verifiers[provider] { return verifier }
        _ = try resolution.provider(named: provider, issuer: "")
        // Not reached: every enabled provider has a verifier.
        throw AuthGateError(.unknownProvider, "no verifier for provider \(ProviderKeySet.printable(provider))")
    }

    /// The verifier type for a provider: Apple and Google by name, OIDC for every other.
    public static func makeVerifier(_ configuration: ProvidersConfiguration.IDTokenProvider, keySet: ProviderKeySet) -> any IdentityVerifier {
        switch configuration.name {
        case "apple": return AppleVerifier(configuration: configuration, keySet: keySet)
        case "google": return GoogleVerifier(configuration: configuration, keySet: keySet)
        default: return OIDCVerifier(configuration: configuration, keySet: keySet)
        }
    }

    /// Where a provider's keys come from, per its configuration.
    public static func source(of configuration: ProvidersConfiguration.IDTokenProvider) -> ProviderKeySet.Source {
        switch configuration.keySource {
        case .url(let url): return .url(url)
        case .file(let path): return .file(path)
        case .discovery: return .discovery(issuer: configuration.issuers.first ?? "")
        }
    }
}
