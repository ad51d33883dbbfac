/// An OpenID provider's discovery document (`<issuer>/.well-known/openid-configuration`, OpenID
/// Connect Discovery 1.0 §3-§4), read strictly: it must name, byte for byte, the issuer it was
/// fetched for, and each URL taken from it must be an `http(s)` URL with a host and no user
/// information, and `https` whenever the issuer is (an `http` issuer is a local test provider), so
/// that nothing an `https` issuer publishes is then fetched or sent over plain HTTP.
///
/// The key sets read `jwks_uri` from it; the browser flow `authorization_endpoint` and
/// `token_endpoint` (both through ``OIDCDiscovery``, which caches it).
struct OIDCDiscoveryDocument: Sendable {
    /// The issuer the document was fetched for (and names).
    let issuer: String
    private let metadata: [String: JSONValue]

    /// Where `issuer` publishes its document.
    static func url(of issuer: String) -> String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
    }

    /// - Throws: ``AuthGateError`` `provider_unavailable` when the body is not a JSON object or
    ///   names another issuer.
    init(parsing body: [UInt8], issuer: String) throws {
        guard let metadata = (try? JSONValue.parse(body))?.objectValue else {
            throw AuthGateError(.providerUnavailable, "the discovery document of \(issuer) is not JSON")
        }
        let named = metadata["issuer"]?.stringValue
        guard let named, ByteExactString(named) == ByteExactString(issuer) else {
            throw AuthGateError(
                .providerUnavailable, "the discovery document names issuer \(ProviderKeySet.printable(named ?? "none")), not \(issuer)")
        }
        self.issuer = issuer
        self.metadata = metadata
    }

    /// The URL the document gives as `name` (`jwks_uri`, `authorization_endpoint`, …), when it
    /// may be used.
    /// - Throws: ``AuthGateError`` with `failure` (`keys_unavailable` for key sets,
    ///   `provider_unavailable` for the browser flow) when it is missing, not a usable URL, or
    ///   `http` for an `https` issuer.
    func url(_ name: String, failure: AuthGateError.Code) throws -> String {
        try Self.usableURL(metadata[name]?.stringValue, named: name, issuer: issuer, failure: failure)
    }

    /// `url`, named `name` in `issuer`'s document, when it may be used (see the type's rules).
    static func usableURL(_ url: String?, named name: String, issuer: String, failure: AuthGateError.Code) throws -> String {
        guard let url, ConfigurationValueParsers.isFetchableURL(url) else {
            throw AuthGateError(
                failure, "the discovery document of \(issuer) has no \(name) that can be used (an http(s) URL with a host, no user or password)")
        }
        guard url.hasPrefix("https://") || !issuer.hasPrefix("https://") else {
            throw AuthGateError(failure, "the discovery document of \(issuer) names a \(name) that is not https")
        }
        return url
    }
}
