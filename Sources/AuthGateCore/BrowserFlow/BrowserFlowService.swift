import Crypto
public import Logging

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// GoTrue's browser redirect flow (`../shared/docs/oauth-flow-contract.md`): `/authorize` sends
/// the browser to Google or Apple with a `state` stored for the flow's lifetime; `/callback` takes
/// that state once, exchanges the provider's code, checks the ID token it returns like any other
/// (signature by `kid`, issuer, audience, expiry, the flow's own nonce, single use) and signs the
/// user in with the id_token grant's rules; the browser goes back with the session in the URL
/// fragment (implicit flow) or with an authorization code that `POST /token?grant_type=pkce`
/// exchanges, once, for the session, given the verifier of the flow's PKCE challenge.
public struct BrowserFlowService: Sendable {
    public let configuration: BrowserFlowConfiguration
    public let policy: RedirectPolicy
    let store: any AuthStore
    let accounts: AccountService
    let codes: AuthorizationCodeClient
    let sealer: ProviderTokenSealer?
    /// The endpoints of OIDC providers configured without them.
    let discovery: OIDCDiscovery
    let logger: Logger

    public init(
        configuration: BrowserFlowConfiguration, store: any AuthStore, accounts: AccountService, codes: AuthorizationCodeClient,
        sealer: ProviderTokenSealer?, discovery: OIDCDiscovery, logger: Logger
    ) {
        self.configuration = configuration
        self.policy = configuration.redirectPolicy
        self.store = store
        self.accounts = accounts
        self.codes = codes
        self.sealer = sealer
        self.discovery = discovery
        self.logger = logger
    }

    /// Parameters `/authorize` reads itself or sets for the provider (compared in lower case);
    /// every other one goes to Google as it came (first value). GoTrue's `reservedOAuthParams`,
    /// and what the gateway sets (`nonce`, the flow's own; `scope`, from `scopes`), so the provider
    /// never sees a parameter twice; the app's `redirect_to`, which Google has no use for.
    static let reserved: Set<String> = [
        "provider", "scopes", "client_id", "client_secret", "redirect_uri", "response_type", "state", "code_challenge",
        "code_challenge_method", "code_verifier", "nonce", "scope", "response_mode", "invite_token", "skip_http_redirect", "redirect_to"
    ]

    /// Where `/authorize` sends the browser, and the cookie it sets there (``FlowCookie``; nil
    /// when the flow is not bound to one).
    public struct Started: Sendable {
        public let location: String
        /// A `Set-Cookie` value.
        public let setCookie: String?
    }

    /// `GET /authorize` (and `GET /user/identities/authorize`, with `linkingTo`): checks the
    /// request in GoTrue's order, stores the flow and returns the provider's URL to send the
    /// browser to, with the cookie that binds an implicit sign-in to the browser.
    /// - Parameters:
    ///   - redirectHeader: a `redirect_to` request header, which wins over the query's.
    ///   - linkingTo: the authenticated caller whose account the identity is linked to.
    /// - Throws: ``AuthGateError`` `validation_failed` (with GoTrue's texts; a link without PKCE
    ///   unless `implicit_linking`), `storeUnavailable`.
    public func authorize(_ query: FormFields, redirectHeader: String?, referer: String?, linkingTo: String? = nil, now: Date) async throws
        -> Started
    {
        let fields = try Self.fields(query, ["provider", "redirect_to", "scopes", "code_challenge", "code_challenge_method"])
        guard let name = fields["provider"]?.lowercased(), let provider = configuration.providers[name] else {
            throw AuthGateError(
                .validationFailed, "provider not offered in browser_flow", clientText: .fixed("Unsupported provider: provider is not enabled"))
        }
        let challenge = try PKCEChallenge.parse(challenge: fields["code_challenge"], method: fields["code_challenge_method"])
        if linkingTo != nil, challenge == nil, !configuration.implicitLinking {
            throw AuthGateError(
                .validationFailed, "linking without PKCE (browser_flow.implicit_linking is off)",
                clientText: .fixed("Linking an identity needs the PKCE flow: send code_challenge and code_challenge_method"))
        }
        let authorizeURL = try await endpoint(\.authorizeURL, \.authorization, of: provider)
        let target = policy.target(redirectTo: redirectHeader ?? fields["redirect_to"], referer: referer)
        let state = UUIDBytes.random()
        let nonce = Base64URL.encode(Base64URL.randomBytes(32))
        // An implicit sign-in hands the session to whichever browser comes to the callback: it
        // must be the one that started here (a link needs PKCE, a PKCE flow its verifier).
        let cookie = challenge == nil && linkingTo == nil && configuration.implicitFlowCookie ? Base64URL.encode(Base64URL.randomBytes(32)) : nil
        let flow = FlowState(
            provider: provider.name, redirectTo: target.text, nonce: nonce, challenge: challenge, createdAt: now, linkingTarget: linkingTo,
            browserBinding: cookie.map { Self.binding(Array($0.utf8)) })
        guard
            try await store.insertIfAbsent(FlowState.storeKey(state: state), value: flow.encoded, expiresAt: configuration.end(ofFlowStartedAt: now))
        else {
            throw AuthGateError(.storeCorrupt, "a new random flow state was already taken")
        }
        var parameters: [(String, String)] = [
            ("client_id", provider.clientID), ("nonce", NonceRule.hashed(nonce)), ("redirect_uri", configuration.callbackURL),
            ("response_type", "code"), ("state", state)
        ]
        if provider.forwardsParameters {
            var scopes = provider.scopes
            for scope in (fields["scopes"] ?? "").split(separator: ",") {
                let trimmed = scope.trimmed
                if !trimmed.isEmpty, !scopes.contains(trimmed) { scopes.append(trimmed) }
            }
            parameters.append(("scope", scopes.joined(separator: " ")))
            var forwarded: Set<String> = []
            for field in query.fields where !Self.reserved.contains(field.name.lowercased()) && forwarded.insert(field.name).inserted {
                parameters.append((field.name, field.value))
            }
        } else {
            // Apple posts the answer as a form when name or email is asked for; it takes no other parameter.
            parameters += [("response_mode", "form_post"), ("scope", provider.scopes.joined(separator: " "))]
        }
        parameters.sort { $0.0 < $1.0 }
        return Started(
            location: authorizeURL + "?" + FormFields.encoded(parameters),
            setCookie: cookie.map {
                FlowCookie.setting(state: state, value: $0, callbackURL: configuration.callbackURL, lifetime: configuration.flowLifetime)
            })
    }

    /// What a flow stores of its ``FlowCookie`` value: its base64url SHA-256.
    static func binding(_ cookie: [UInt8]) -> String {
        Base64URL.encode(Array(SHA256.hash(data: cookie)))
    }

    /// `provider`'s configured URL, else the one its issuer's discovery document names.
    /// - Throws: ``AuthGateError`` `provider_unavailable` when that document cannot be read.
    private func endpoint(
        _ configured: KeyPath<BrowserFlowConfiguration.Provider, String?>, _ discovered: KeyPath<OIDCDiscovery.Endpoints, String>,
        of provider: BrowserFlowConfiguration.Provider
    ) async throws -> String {
        if let url = provider[keyPath: configured] { return url }
        guard let issuer = provider.discoveryIssuer else {
            throw AuthGateError(.providerUnavailable, "\(provider.name) has neither a configured URL nor an issuer to discover it from")
        }
        return try await discovery.endpoints(issuer: issuer)[keyPath: discovered]
    }

    /// Where `/callback` sends the browser, and why (for the log and the metrics).
    public struct Redirect: Sendable, Equatable {
        /// 302, or 303 when the flow's state could not be loaded (GoTrue's codes).
        public let status: Int
        public let location: String
        /// `ok`, or the error code the browser was given.
        public let outcome: String
        /// The user signed in, when it got that far.
        public let userID: String?
        /// A `Set-Cookie` value removing the flow's ``FlowCookie``, when it had one.
        public var clearCookie: String?
    }

    /// `GET` or `POST /callback` with the provider's answer (`state`, `code`, or `error`; Apple's
    /// form adds `user` on the first authorization) and the browser's `Cookie` fields. Every
    /// outcome is a redirect: the flow's target with the session or the code, or with `error`,
    /// `error_code` and `error_description`.
    public func callback(_ fields: FormFields, cookies: [String], device: SessionDevice, now: Date) async -> Redirect {
        let stateText: String?
        do {
            stateText = try fields.nonEmpty("state")
        } catch {
            return stateError("bad_oauth_state", "OAuth state parameter is invalid")
        }
        guard let stateText else { return stateError("bad_oauth_callback", "OAuth state parameter missing") }
        guard let state = UUIDBytes.canonical(stateText) else { return stateError("bad_oauth_state", "OAuth state parameter is invalid") }
        let taken: String?
        do {
            taken = try await store.take(FlowState.storeKey(state: state))
        } catch {
            return stateError("unexpected_failure", "The session store is unavailable; try again", error: "temporarily_unavailable")
        }
        guard let taken, let flow = FlowState(encoded: taken) else { return stateError("bad_oauth_state", "OAuth state not found or expired") }
        guard now < configuration.end(ofFlowStartedAt: flow.createdAt) else {
            return stateError("bad_oauth_state", "OAuth state has expired")
        }
        let target = RedirectTarget(flow.redirectTo) ?? policy.siteURL
        guard let binding = flow.browserBinding else {
            // Unbound: a PKCE flow or a link (bound otherwise), or the operator's choice. An
            // implicit sign-in that should have been bound (started before the gateway bound
            // them, or while the option was off) is refused, not let through.
            guard flow.challenge != nil || flow.linkingTarget != nil || !configuration.implicitFlowCookie else {
                return refusedBrowser(flow, target: target, reason: "the flow was started without a browser cookie")
            }
            return await callback(flow, fields, target: target, device: device, now: now)
        }
        let cookieName = FlowCookie.name(state: state, callbackURL: configuration.callbackURL)
        var redirect: Redirect
        if FlowCookie.values(named: cookieName, in: cookies).contains(where: { ConstantTime.equal(Self.binding($0).utf8, binding.utf8) }) {
            redirect = await callback(flow, fields, target: target, device: device, now: now)
        } else {
            redirect = refusedBrowser(flow, target: target, reason: "the browser lacks the flow's cookie")
        }
        redirect.clearCookie = FlowCookie.clearing(state: state, callbackURL: configuration.callbackURL)
        return redirect
    }

    /// The redirect for an implicit sign-in's callback that came without the flow's cookie.
    private func refusedBrowser(_ flow: FlowState, target: RedirectTarget, reason: String) -> Redirect {
        logger.notice(
            "browser flow refused", metadata: ["gw.provider": "\(flow.provider)", "gw.outcome": "bad_oauth_state", "gw.reason": "\(reason)"])
        return Self.errorRedirect(
            target, "invalid_request", "bad_oauth_state", "OAuth state belongs to another browser: sign in again from this one")
    }

    /// The callback of a flow found (and, when bound, from its browser).
    private func callback(_ flow: FlowState, _ fields: FormFields, target: RedirectTarget, device: SessionDevice, now: Date) async -> Redirect {
        do {
            let fields = try Self.fields(fields, ["error", "error_description", "code", "user"])
            if let providerError = fields["error"] {
                var parameters = [("error", providerError)]
                if let description = fields["error_description"] { parameters.append(("error_description", description)) }
                return Self.errorRedirect(target, parameters, outcome: "provider_error")
            }
            guard let code = fields["code"] else {
                return Self.errorRedirect(
                    target, "invalid_request", "bad_oauth_callback", "OAuth callback with missing authorization code missing")
            }
            return try await signIn(flow, code: code, appleUser: fields["user"], target: target, device: device, now: now)
        } catch let failure as BrowserFlowFailure {
            log(failure.cause, provider: flow.provider)
            let description =
                switch failure.stage {
                case .codeExchange: "Unable to exchange external code"
                case .profile: "Error getting user profile from external provider"
                case .email: "Error getting user email from external provider"
                }
            return Self.errorRedirect(target, "server_error", "unexpected_failure", description)
        } catch let error as AuthGateError {
            log(error, provider: flow.provider)
            let (name, code, description) = Self.callbackError(error)
            return Self.errorRedirect(target, name, code, description)
        } catch {
            return Self.errorRedirect(target, "invalid_request", "validation_failed", "The callback's parameters are malformed")
        }
    }

    /// Exchanges the code, checks the ID token, signs the user in and builds the success redirect.
    private func signIn(_ flow: FlowState, code: String, appleUser: String?, target: RedirectTarget, device: SessionDevice, now: Date)
        async throws -> Redirect
    {
        guard let provider = configuration.providers[flow.provider] else {
            throw AuthGateError(.validationFailed, "the flow's provider is no longer offered")
        }
        let grant: AuthorizationCodeClient.Grant
        do {
            let tokenURL = try await endpoint(\.tokenURL, \.token, of: provider)
            grant = try await codes.exchange(code: code, provider: provider, tokenURL: tokenURL, redirectURI: configuration.callbackURL, now: now)
        } catch let error as AuthGateError {
            throw BrowserFlowFailure(stage: .codeExchange, cause: error)
        }
        var (identity, marks): (VerifiedIdentity, SingleUseMarks)
        do {
            (identity, marks) = try await accounts.idTokens.checkBrowserFlow(
                provider: provider.name, idToken: grant.idToken, accessToken: grant.accessToken, flowNonce: flow.nonce, now: now)
            guard identity.audiences.contains(where: { ByteExactString($0) == ByteExactString(provider.clientID) }) else {
                throw AuthGateError(.audience, "the ID token is not for the web client \(provider.clientID)")
            }
        } catch let error as AuthGateError {
            throw BrowserFlowFailure(stage: .profile, cause: error)
        }
        guard identity.email != nil else {
            throw BrowserFlowFailure(stage: .email, cause: AuthGateError(.validationFailed, "the provider gave no email"))
        }
        if provider.name == "apple", let name = appleUser.flatMap(Self.appleName) { identity = identity.named(name) }
        if provider.name == "apple", let refreshToken = grant.refreshToken, let sealer {
            identity.sealedRefreshToken = try sealer.seal(refreshToken, provider: "apple", subject: identity.subject)
            identity.refreshTokenClientID = provider.clientID
        }
        let now = now.atStoredMillisecond
        guard let challenge = flow.challenge else {
            // Implicit: the session now, in the fragment.
            let signedIn = try await account(for: identity, linkingTarget: flow.linkingTarget, taking: marks, device: device, now: now)
            let issued = try accounts.issue(
                for: signedIn.user, identities: signedIn.identities, session: signedIn.session, refreshToken: signedIn.refreshToken, now: now)
            var fragment: [(String, String)] = [
                ("access_token", issued.accessToken), ("expires_at", String(issued.expiresAt)), ("expires_in", String(issued.expiresIn))
            ]
            if let providerRefresh = grant.refreshToken { fragment.append(("provider_refresh_token", providerRefresh)) }
            fragment += [("provider_token", grant.accessToken), ("refresh_token", issued.refreshToken), ("sb", ""), ("token_type", "bearer")]
            return Redirect(
                status: 302, location: Self.withoutFragment(target.text) + "#" + FormFields.encoded(fragment), outcome: "ok", userID: signedIn.user.id
            )
        }
        // PKCE: nothing is written until the browser that started the flow presents its verifier.
        // The ID token's single use is taken now, and a sign-in the account's state refuses now is
        // refused here, as GoTrue refuses it at its callback (the exchange decides again).
        try await accounts.checkSignIn(identity, linkingTo: flow.linkingTarget, taking: marks, now: now)
        let authCode = UUIDBytes.random()
        let record = FlowCode(
            identity: identity, linkingTarget: flow.linkingTarget, challenge: challenge, createdAt: flow.createdAt,
            sealedProviderToken: try sealer.flatMap {
                grant.accessToken.isEmpty ? nil : try $0.seal(grant.accessToken, provider: provider.name, subject: identity.subject)
            },
            sealedProviderRefreshToken: try sealer.flatMap { sealer in
                try grant.refreshToken.map { try sealer.seal($0, provider: provider.name, subject: identity.subject) }
            })
        // Kept a lifetime past the flow's end, so that a late exchange is told it expired.
        let expiresAt = configuration.end(ofFlowStartedAt: flow.createdAt).addingTimeInterval(configuration.flowLifetime.inSeconds)
        guard try await store.insertIfAbsent(FlowCode.storeKey(code: authCode), value: record.encoded, expiresAt: expiresAt) else {
            throw AuthGateError(.storeCorrupt, "a new random authorization code was already taken")
        }
        return Redirect(status: 302, location: Self.settingQuery(target.text, [("code", authCode)]), outcome: "ok", userID: nil)
    }

    /// The sign-in (find or create) or, for a linking flow, the link to its target user, with a
    /// session on `device`; `marks` (nil when already taken) are taken first.
    private func account(
        for identity: VerifiedIdentity, linkingTarget: String?, taking marks: SingleUseMarks?, device: SessionDevice, now: Date
    ) async throws -> AccountService.SignedInAccount {
        guard let target = linkingTarget else {
            return try await accounts.commitSignIn(identity, taking: marks, startingSessionOn: device, now: now)
        }
        if let marks { try await accounts.idTokens.take(marks) }
        return try await accounts.linkAccount(identity, userID: target, sessionID: nil, startingFrom: nil, startingSessionOn: device, now: now)
    }

    /// What `POST /token?grant_type=pkce` gives: the session, and the provider's tokens when
    /// they were kept.
    public struct Exchanged: Sendable {
        public let session: IssuedSession
        public let providerToken: String?
        public let providerRefreshToken: String?
    }

    /// `POST /token?grant_type=pkce`: GoTrue's checks in its order. A wrong verifier leaves the
    /// code usable; a right one takes it, once (of two racing exchanges, one gets the session),
    /// and only then is the account written: signed in, or the identity linked.
    /// - Throws: ``AuthGateError`` `validation_failed`, `flow_state_not_found`,
    ///   `flow_state_expired`, `bad_code_verifier`, `user_banned`, `user_not_found`.
    public func exchange(authCode: String, verifier: String, device: SessionDevice, now: Date) async throws -> Exchanged {
        guard !authCode.isEmpty, !verifier.isEmpty else {
            throw AuthGateError(
                .validationFailed, "auth_code or code_verifier empty",
                clientText: .fixed("invalid request: both auth code and code verifier should be non-empty"))
        }
        let key = FlowCode.storeKey(code: authCode)
        guard let text = try await store.value(of: key), let flow = FlowCode(encoded: text) else {
            throw AuthGateError(.flowStateNotFound, "no flow for this authorization code")
        }
        guard now < configuration.end(ofFlowStartedAt: flow.createdAt) else {
            _ = try await store.take(key)
            throw AuthGateError(.flowStateExpired, "the flow began more than its lifetime ago")
        }
        guard flow.challenge.isAnswered(by: verifier) else {
            throw AuthGateError(.badCodeVerifier, "the verifier does not answer the challenge")
        }
        guard try await store.take(key) != nil else { throw AuthGateError(.flowStateNotFound, "the authorization code was exchanged meanwhile") }
        // Now, and only now, the account: found or created, or the identity linked, as the
        // implicit flow does at the callback (a ban or deletion since is seen here).
        let now = now.atStoredMillisecond
        let signedIn = try await account(for: flow.identity, linkingTarget: flow.linkingTarget, taking: nil, device: device, now: now)
        let issued = try accounts.issue(
            for: signedIn.user, identities: signedIn.identities, session: signedIn.session, refreshToken: signedIn.refreshToken, now: now)
        let provider = flow.identity.provider
        let subject = flow.identity.subject
        return Exchanged(
            session: issued,
            providerToken: flow.sealedProviderToken.flatMap { try? sealer?.open($0, provider: provider, subject: subject) },
            providerRefreshToken: flow.sealedProviderRefreshToken.flatMap { try? sealer?.open($0, provider: provider, subject: subject) })
    }

    // MARK: helpers

    /// The named parameters, each given at most once; empty values are absent.
    static func fields(_ form: FormFields, _ names: [String]) throws -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            do {
                if let value = try form.nonEmpty(name) { values[name] = value }
            } catch {
                throw AuthGateError(.validationFailed, "\(name) given more than once", clientText: .fixed("A parameter is given more than once"))
            }
        }
        return values
    }

    private func log(_ error: AuthGateError, provider: String) {
        logger.notice(
            "browser flow refused", metadata: ["gw.provider": "\(provider)", "gw.outcome": "\(error.code)", "gw.reason": "\(error.message)"])
    }

    /// 303 to the site URL with the error in the query (the flow's target is unknown).
    private func stateError(_ code: String, _ description: String, error: String = "invalid_request") -> Redirect {
        let location = Self.settingQuery(policy.siteURL.text, [("error", error), ("error_code", code), ("error_description", description)])
        return Redirect(status: 303, location: location, outcome: code, userID: nil)
    }

    static func errorRedirect(_ target: RedirectTarget, _ error: String, _ code: String, _ description: String) -> Redirect {
        errorRedirect(target, [("error", error), ("error_code", code), ("error_description", description)], outcome: code)
    }

    /// 302 to the target: the error in its query (its own parameters kept), and again in the
    /// fragment (the non-empty ones, then `sb=`), as GoTrue's `redirectErrors` writes it.
    static func errorRedirect(_ target: RedirectTarget, _ parameters: [(String, String)], outcome: String) -> Redirect {
        let withQuery = settingQuery(target.text, parameters)
        let fragment = parameters.filter { !$0.1.isEmpty } + [("sb", "")]
        return Redirect(status: 302, location: withoutFragment(withQuery) + "#" + FormFields.encoded(fragment), outcome: outcome, userID: nil)
    }

    /// GoTrue's error triple for a callback that failed after the state was loaded (§6.6).
    static func callbackError(_ error: AuthGateError) -> (String, String, String) {
        switch error.code {
        case .userBanned:
            return ("access_denied", "user_banned", "User is banned")
        case .signupDisabled:
            return ("access_denied", "signup_disabled", "Signups not allowed for this instance")
        case .storeUnavailable, .providerUnavailable:
            return ("temporarily_unavailable", "unexpected_failure", "The provider or the session store is unavailable; try again")
        case .identityAlreadyExists:
            return ("server_error", "identity_already_exists", "Identity is already linked to another user")
        case .emailExists:
            return ("server_error", "email_exists", "A user with this email address has already been registered")
        case .emailNotConfirmed:
            return ("server_error", "email_not_confirmed", "Unverified email with the provider")
        case .userNotFound:
            return ("invalid_request", "user_not_found", "Linking target user not found")
        case .validationFailed:
            return ("invalid_request", "validation_failed", "The callback's parameters are malformed")
        default:
            return ("server_error", "unexpected_failure", "Unable to sign in with the provider")
        }
    }

    /// `text` without its fragment.
    static func withoutFragment(_ text: String) -> Substring {
        text[..<(text.firstIndex(of: "#") ?? text.endIndex)]
    }

    /// `text` with `parameters` set in its query (earlier values of those names removed, the
    /// others and the fragment kept).
    static func settingQuery(_ text: String, _ parameters: [(String, String)]) -> String {
        let fragmentStart = text.firstIndex(of: "#") ?? text.endIndex
        let beforeFragment = text[..<fragmentStart]
        let queryStart = beforeFragment.firstIndex(of: "?")
        let base = beforeFragment[..<(queryStart ?? beforeFragment.endIndex)]
        let names = Set(parameters.map { FormFields.percentEncoded($0.0) })
        var pairs: [Substring] = []
        if let queryStart {
            pairs = beforeFragment[beforeFragment.index(after: queryStart)...].split(separator: "&").filter { pair in
                !names.contains(String(pair.prefix { $0 != "=" }))
            }
        }
        let query = (pairs.map(String.init) + [FormFields.encoded(parameters)]).joined(separator: "&")
        return base + "?" + query + text[fragmentStart...]
    }

    /// `"<firstName> <lastName>"` from Apple's `user` form field (sent on the first authorization
    /// only), trimmed; nil when absent, not that JSON, empty or longer than a name can be.
    static func appleName(_ text: String) -> String? {
        guard text.utf8.count <= 4096, let name = (try? JSONValue.parse(Array(text.utf8)))?.objectValue?["name"]?.objectValue else { return nil }
        let parts = [name["firstName"]?.stringValue, name["lastName"]?.stringValue].compactMap { $0?.trimmed }.filter { !$0.isEmpty }
        let full = parts.joined(separator: " ")
        return full.isEmpty || full.utf8.count > 256 ? nil : full
    }
}

/// Where a callback failed after the flow's state was loaded, for the browser's error text.
struct BrowserFlowFailure: Error {
    enum Stage { case codeExchange, profile, email }
    let stage: Stage
    let cause: AuthGateError
}

extension VerifiedIdentity {
    /// The identity with `name` and `full_name` set in its `identity_data` (Apple's `user` field).
    func named(_ fullName: String) -> VerifiedIdentity {
        var copy = self
        copy.name = fullName
        copy.identityData["name"] = .string(fullName)
        copy.identityData["full_name"] = .string(fullName)
        return copy
    }
}
