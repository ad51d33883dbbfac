#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// `browser_flow:`: GoTrue's browser redirect flow (`GET /auth/v1/authorize`, `/callback`,
/// `POST /token?grant_type=pkce`) for web apps and Android, with Google, Apple and configured
/// OpenID Connect providers as the providers the browser signs in with. Off unless `enabled`.
public struct BrowserFlowConfiguration: Sendable {
    /// How AuthGate talks to one provider in the browser flow.
    public struct Provider: Sendable {
        /// `apple`, `google`, or the name of one of `providers.oidc`.
        public var name: String
        /// The web client id: Google's web client, Apple's Services ID, an OIDC client. It must be
        /// one of the provider's `audiences` (the ID token the code exchange returns is issued to it).
        public var clientID: String
        /// The client secret (`client_secret_file`, or `AUTHGATE_BROWSER_FLOW_GOOGLE_CLIENT_SECRET`
        /// for Google); nil for Apple, whose secret AuthGate mints with `providers.apple`'s key.
        public var clientSecret: String?
        /// Where the client secret was read from (shown by `check-config`; the secret never is).
        public var clientSecretFile: String?
        /// Where the browser is sent to sign in; nil: the `authorization_endpoint` of
        /// ``discoveryIssuer``'s discovery document.
        public var authorizeURL: String?
        /// Where the code is exchanged (Apple: `providers.apple.api_url` + `/auth/token`); nil:
        /// the `token_endpoint` of ``discoveryIssuer``'s discovery document.
        public var tokenURL: String?
        /// The OpenID Connect issuer whose discovery document gives the URLs not configured
        /// (``OIDCDiscovery``); nil when both are.
        public var discoveryIssuer: String?
        /// The scopes always asked for (Google: `email profile`; Apple: `email name`; OIDC:
        /// `openid email profile` unless configured).
        public var scopes: [String]
        /// Whether the app's other `/authorize` parameters (and `scopes`) go to the provider:
        /// Google's and OIDC providers' yes, Apple's no (it takes no other parameter).
        public var forwardsParameters: Bool
    }

    public var enabled: Bool
    /// Where the browser goes when `redirect_to` is missing or not allowed (GoTrue's `SITE_URL`).
    public var siteURL: RedirectTarget
    /// `redirect_urls`: GoTrue's `URI_ALLOW_LIST`, globs (``RedirectGlob``).
    public var redirectURLs: [RedirectGlob]
    /// The `redirect_uri` registered with the providers: this gateway's `/auth/v1/callback`.
    public var callbackURL: String
    /// How long a flow may take from `/authorize` to the code exchange (GoTrue: 300 s).
    public var flowLifetime: Duration
    /// The providers offered, by name.
    public var providers: [String: Provider]
    /// `implicit_linking`: whether `/user/identities/authorize` may link without PKCE. Off by
    /// default: an implicit flow links at the callback, so a linking flow someone started for
    /// their own account and got another person to finish at the provider would give them that
    /// person's identity (GoTrue allows it). With PKCE nothing is linked before the verifier.
    public var implicitLinking: Bool
    /// `implicit_flow_cookie`: whether an implicit sign-in's callback needs the ``FlowCookie``
    /// its `/authorize` set (on by default; off for a deployment whose browsers reach
    /// `/authorize` on another host than `callback_url`).
    public var implicitFlowCookie: Bool

    /// When a flow started at `start` ends: the state, the code and its exchange are refused after.
    public func end(ofFlowStartedAt start: Date) -> Date {
        start.addingTimeInterval(flowLifetime.inSeconds)
    }

    /// What ``redirectPolicy`` decides with.
    public var redirectPolicy: RedirectPolicy { RedirectPolicy(siteURL: siteURL, allowList: redirectURLs) }

    init(reading section: ConfigurationSection, publicURL: String, providers: ProvidersConfiguration) {
        enabled = section.bool("enabled", default: false)
        let siteText = section.optionalString("site_url")
        if let siteText, let parsed = RedirectTarget(siteText) {
            siteURL = parsed
        } else {
            siteURL = .localDevelopment
            if siteText != nil || enabled {
                section.report("site_url", "set it to your app's URL (http:// or https://, no user, no . or .. segments): the browser lands there")
            }
        }
        var globs: [RedirectGlob] = []
        for entry in section.stringList("redirect_urls") {
            do {
                globs.append(try RedirectGlob(entry))
            } catch {
                section.report("redirect_urls", "\"\(ProviderKeySet.printable(entry))\" is not a glob (\(error)): see docs/configuration.md")
            }
        }
        redirectURLs = globs
        callbackURL = section.string("callback_url", default: publicURL + "/auth/v1/callback")
        if !ConfigurationValueParsers.isFetchableURL(callbackURL) { section.report("callback_url", ConfigurationValueParsers.fetchableURLRule) }
        flowLifetime = section.duration("flow_lifetime", default: .seconds(300), minimum: .seconds(60), maximum: .seconds(3600))
        implicitLinking = section.bool("implicit_linking", default: false)
        implicitFlowCookie = section.bool("implicit_flow_cookie", default: true)
        var offered: [String: Provider] = [:]
        let google = section.section("google")
        if let clientID = google.optionalString("client_id") {
            let secret = SecretReader().secret(in: google, key: "client_secret")
            if secret == nil { google.report("client_secret_file", "Google's web client secret is needed to exchange codes") }
            Self.check(clientID, of: providers.google, in: google)
            offered["google"] = Provider(
                name: "google", clientID: clientID, clientSecret: secret, clientSecretFile: google.optionalString("client_secret_file"),
                authorizeURL: Self.url(google, "authorize_url", default: "https://accounts.google.com/o/oauth2/v2/auth"),
                tokenURL: Self.url(google, "token_url", default: "https://oauth2.googleapis.com/token"), discoveryIssuer: nil,
                scopes: ["email", "profile"], forwardsParameters: true)
        }
        google.finish()
        let apple = section.section("apple")
        if let clientID = apple.optionalString("client_id") {
            Self.check(clientID, of: providers.apple, in: apple)
            if providers.appleServer == nil {
                apple.report(
                    "client_id", "needs providers.apple team_id, key_id and private_key_file: AuthGate mints Apple's client_secret with them")
            }
            offered["apple"] = Provider(
                name: "apple", clientID: clientID, clientSecret: nil, clientSecretFile: nil,
                authorizeURL: Self.url(apple, "authorize_url", default: "https://appleid.apple.com/auth/authorize"),
                tokenURL: (providers.appleServer?.apiURL ?? "https://appleid.apple.com") + "/auth/token", discoveryIssuer: nil,
                scopes: ["email", "name"], forwardsParameters: false)
        }
        apple.finish()
        for item in section.sections("oidc") {
            let name = item.string("name", default: "")
            guard let configured = providers.oidc.first(where: { $0.name == name }) else {
                item.report("name", "\"\(ProviderKeySet.printable(name))\" must be the name of one of providers.oidc")
                continue
            }
            if offered[name] != nil { item.report("name", "\"\(name)\" is offered twice") }
            let clientID = item.string("client_id", default: "")
            if clientID.isEmpty { item.report("client_id", "the OIDC client id of the web app (one of providers.oidc's audiences)") }
            Self.check(clientID, of: configured, in: item)
            let secret = SecretReader().secret(in: item, key: "client_secret")
            if secret == nil { item.report("client_secret_file", "the client's secret is needed to exchange codes") }
            let authorizeURL = Self.optionalURL(item, "authorize_url")
            let tokenURL = Self.optionalURL(item, "token_url")
            offered[name] = Provider(
                name: name, clientID: clientID, clientSecret: secret, clientSecretFile: item.optionalString("client_secret_file"),
                authorizeURL: authorizeURL, tokenURL: tokenURL,
                discoveryIssuer: authorizeURL == nil || tokenURL == nil ? configured.issuers.first : nil,
                scopes: item.stringList("scopes", default: ["openid", "email", "profile"]), forwardsParameters: true)
            item.finish()
        }
        self.providers = offered
        if enabled, offered.isEmpty {
            section.report("enabled", "name at least one provider (browser_flow.google, browser_flow.apple or browser_flow.oidc with its client_id)")
        }
        section.finish()
    }

    private static func check(_ clientID: String, of provider: ProvidersConfiguration.IDTokenProvider, in section: ConfigurationSection) {
        if !provider.enabled {
            section.report("client_id", "providers.\(provider.name) must be enabled: its ID tokens are checked with its keys")
        } else if !provider.audiences.contains(clientID) {
            section.report("client_id", "\"\(clientID)\" must also be listed in providers.\(provider.name).audiences")
        }
    }

    /// A URL the operator may give; nil when absent (then the provider's discovery document names it).
    private static func optionalURL(_ section: ConfigurationSection, _ key: String) -> String? {
        guard let url = section.optionalString(key) else { return nil }
        if !ConfigurationValueParsers.isFetchableURL(url) { section.report(key, ConfigurationValueParsers.fetchableURLRule) }
        return url
    }

    private static func url(_ section: ConfigurationSection, _ key: String, default value: String) -> String {
        let url = section.string(key, default: value)
        if !ConfigurationValueParsers.isFetchableURL(url) { section.report(key, ConfigurationValueParsers.fetchableURLRule) }
        return url
    }
}
