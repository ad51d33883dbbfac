import AsyncHTTPClient
import AuthGateCore
import AuthGateTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

@testable import AuthGateHTTP

/// GoTrue's browser redirect flow end to end over HTTP (`/authorize`, `/callback`,
/// `POST /token?grant_type=pkce`), against a fake Google token endpoint and a fake Apple that
/// check every exchange, with ID tokens signed by a fake provider's keys.
@Suite("Browser flow", .timeLimit(.minutes(3)))
struct BrowserFlowTests {
    static let webClient = "web-client"
    static let servicesID = "com.example.web"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let callbackURL = "https://auth.example.com/auth/v1/callback"
    static let verifier = String(repeating: "v", count: 20) + "-._~" + String(repeating: "Z9", count: 12)

    static func challenge(_ verifier: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(verifier.utf8))))
    }

    struct Rig {
        let keys: FakeProvider
        let google: FakeOAuthTokenEndpoint
        /// The token endpoint of `corp`, an OpenID Connect provider whose issuer is `keys`.
        let corp: FakeOAuthTokenEndpoint
        let apple: FakeAppleAPI
        let dependencies: GatewayApplication.Dependencies
        let app: Application<GatewayRouterResponder<AuthGateRequestContext>>
        let directory: String
        var service: BrowserFlowService {
            get throws { try #require(dependencies.browserFlow) }
        }

        func stop() async {
            await google.stop()
            await corp.stop()
            await apple.stop()
            await keys.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// - Parameter corpDiscovery: whether `corp`'s discovery document names its endpoints (the
    ///   configuration gives none).
    func rig(
        store: any AuthStore = MemoryAuthStore(), sealing: Bool = true, manualLinking: Bool = true, implicitLinking: Bool = false,
        corpDiscovery: Bool = true, implicitFlowCookie: Bool = true, disableSignup: Bool = false
    ) async throws -> Rig {
        let keys = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        let google = try await FakeOAuthTokenEndpoint.start(clientID: Self.webClient, clientSecret: "google-secret", redirectURI: Self.callbackURL)
        let corp = try await FakeOAuthTokenEndpoint.start(clientID: "corp-web", clientSecret: "google-secret", redirectURI: Self.callbackURL)
        if corpDiscovery { keys.setEndpoints(authorization: "https://id.example/auth", token: corp.tokenURL) }
        let teamKey = P256.Signing.PrivateKey()
        let apple = try await FakeAppleAPI.start(teamID: Self.teamID, keyID: Self.keyID, publicKey: teamKey.publicKey)
        let directory = NSTemporaryDirectory() + "authgate-browser-flow-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try teamKey.pemRepresentation.write(toFile: directory + "/apple.p8", atomically: true, encoding: .utf8)
        try "google-secret\n".write(toFile: directory + "/google.secret", atomically: true, encoding: .utf8)
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString().write(
            toFile: directory + "/token.key", atomically: true, encoding: .utf8)
        // Apple's REST API needs the token encryption key: without sealing, Google alone.
        let appleServer = sealing ? ", team_id: \(Self.teamID), key_id: \(Self.keyID), private_key_file: apple.p8, api_url: \"\(apple.url)\"" : ""
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers:
                  \(sealing ? "token_encryption_key_file: token.key" : "")
                  apple: { enabled: true, audiences: [com.example.app, \(Self.servicesID)], jwks_url: "\(keys.jwksURL)"\(appleServer) }
                  google: { enabled: true, audiences: [\(Self.webClient), ios-client], jwks_url: "\(keys.jwksURL)" }
                  anonymous: { enabled: true }
                  oidc: [ { name: corp, issuer: "\(keys.issuer)", audiences: [corp-web], jwks_url: "\(keys.jwksURL)" } ]
                rate_limits: { token: off, signup: off, nonce: off }
                security: { manual_linking_enabled: \(manualLinking) }
                users: { disable_signup: \(disableSignup) }
                browser_flow:
                  enabled: true
                  site_url: https://app.example.com
                  redirect_urls: ["http://localhost:3000/**", "com.example.app://login-callback"]
                  callback_url: "\(Self.callbackURL)"
                  implicit_linking: \(implicitLinking)
                  implicit_flow_cookie: \(implicitFlowCookie)
                  google: { client_id: \(Self.webClient), client_secret_file: google.secret, authorize_url: "https://accounts.example/o/auth",
                            token_url: "\(google.tokenURL)" }
                  \(sealing ? "apple: { client_id: \(Self.servicesID) }" : "")
                  oidc:
                    - { name: corp, client_id: corp-web, client_secret_file: google.secret }
                """,
            baseDirectory: directory, environment: [:])
        let verifiers = IdentityVerifierRegistry(
            providers: configuration.providers, fetcher: HTTPJWKSFetcher(client: .shared), logger: .init(label: "browser-flow"))
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: store, keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true),
            verifiers: verifiers, providerHTTPClient: .shared)
        let app = Application(router: GatewayApplication.buildRouter(dependencies))
        return Rig(keys: keys, google: google, corp: corp, apple: apple, dependencies: dependencies, app: app, directory: directory)
    }

    /// An ID token as Google's token endpoint returns it to the flow.
    static func googleToken(subject: String, nonce: String?, email: String? = nil, audience: String = webClient, atHash: String? = nil) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": "https://accounts.google.com", "aud": .string(audience), "sub": .string(subject), "iat": .integer(now),
            "exp": .integer(now + 600), "email": .string(email ?? "\(subject)@example.com"), "email_verified": true,
            "jti": .string(UUID().uuidString)
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        if let atHash { claims["at_hash"] = .string(atHash) }
        return FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
    }

    static func appleToken(subject: String, nonce: String?) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": "https://appleid.apple.com", "aud": .string(servicesID), "sub": .string(subject), "iat": .integer(now),
            "exp": .integer(now + 600), "email": .string("\(subject)@privaterelay.appleid.com"), "email_verified": "true",
            "jti": .string(UUID().uuidString)
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        return FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
    }

    /// A response's status, `Location` and JSON body.
    struct Answer {
        let status: HTTPResponse.Status
        let location: String?
        let headers: HTTPFields
        let body: [String: JSONValue]
    }

    /// A browser's cookies for the gateway: what `Set-Cookie` set (and `Max-Age=0` removed), sent
    /// back as `Cookie`.
    final class Browser: Sendable {
        private let cookies = Mutex<[String: String]>([:])

        var cookieHeader: String? {
            cookies.withLock { $0.isEmpty ? nil : $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        }

        func receive(_ headers: HTTPFields) {
            for setCookie in headers[values: .setCookie] {
                let pair = setCookie.prefix { $0 != ";" }
                guard let equals = pair.firstIndex(of: "=") else { continue }
                let name = String(pair[..<equals])
                let value = String(pair[pair.index(after: equals)...])
                cookies.withLock { $0[name] = setCookie.contains("Max-Age=0") ? nil : value }
            }
        }
    }

    static func send(
        _ client: some TestClientProtocol, _ uri: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:], body: String? = nil,
        browser: Browser? = nil
    )
        async throws -> Answer
    {
        var headers = headers
        if let browser, let cookie = browser.cookieHeader { headers[.cookie] = cookie }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            browser?.receive(response.headers)
            return Answer(
                status: response.status, location: response.headers[.location], headers: response.headers,
                body: (try? JSONValue.parse(Array(response.body.readableBytesView)).objectValue) ?? [:])
        }
    }

    /// `POST /token?grant_type=pkce` with `code` and `verifier`.
    static func exchange(_ client: some TestClientProtocol, code: String, verifier: String = verifier) async throws -> Answer {
        try await send(
            client, "/auth/v1/token?grant_type=pkce", method: .post, headers: [.contentType: "application/json"],
            body: "{\"auth_code\":\"\(code)\",\"code_verifier\":\"\(verifier)\"}")
    }

    /// The query fields of a URL (after `?`, before `#`), and its fragment's.
    static func query(_ url: String) throws -> [String: String] {
        let beforeFragment = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let parts = beforeFragment.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return try fields(parts.count == 2 ? String(parts[1]) : "")
    }

    static func fragment(_ url: String) throws -> [String: String] {
        let parts = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        return try fields(parts.count == 2 ? String(parts[1]) : "")
    }

    static func fields(_ text: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for field in try FormFields(parsing: text).fields { result[field.name] = field.value }
        return result
    }

    /// `/authorize` for `provider` with `extra` query text: the provider URL's fields.
    static func authorize(_ client: some TestClientProtocol, provider: String = "google", extra: String, browser: Browser? = nil) async throws
        -> [String: String]
    {
        let answer = try await send(client, "/auth/v1/authorize?provider=\(provider)&\(extra)", browser: browser)
        #expect(answer.status == .found, "\(answer.body)")
        #expect(answer.headers[.cacheControl] == "no-store")
        return try query(try #require(answer.location))
    }

    /// The rest of a flow `/authorize` answered with `started`: Google signs `subject` in (with
    /// `code`) and the browser comes to the callback; where the callback sends it.
    static func finishAtGoogle(
        _ client: some TestClientProtocol, _ rig: Rig, started: Answer, subject: String, code: String, browser: Browser? = nil
    ) async throws -> String {
        let startedLocation = try #require(started.location)
        let sent = try query(startedLocation)
        rig.google.register(code: code, grant: .init(idToken: googleToken(subject: subject, nonce: sent["nonce"])))
        let back = try await send(client, "/auth/v1/callback?state=\(sent["state"] ?? "")&code=\(code)", browser: browser)
        return try #require(back.location)
    }

    static var pkceQuery: String {
        "redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb%3Fnext%3D1&code_challenge=\(challenge(verifier))&code_challenge_method=S256"
    }

    @Test("PKCE with Google: authorize, callback, then the code and verifier for a session, once", arguments: TestStoreKind.allCases)
    func pkceGoogle(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let rig = try await rig(store: store)
            try await rig.app.test(.router) { client in
                let sent = try await Self.authorize(
                    client, extra: Self.pkceQuery + "&access_type=offline&prompt=consent&client_id=evil&Scope=x&nonce=n&State=s")
                #expect(sent["client_id"] == Self.webClient)
                #expect(sent["redirect_uri"] == Self.callbackURL)
                #expect(sent["response_type"] == "code")
                #expect(sent["scope"] == "email profile")
                #expect(sent["access_type"] == "offline")
                #expect(sent["prompt"] == "consent")
                #expect(sent["code_challenge"] == nil, "the challenge stays with the gateway")
                #expect(sent["Scope"] == nil && sent["State"] == nil && sent["nonce"] != "n", "no parameter the gateway sets comes from the client")
                let state = try #require(sent["state"])
                let nonce = try #require(sent["nonce"])
                rig.google.register(
                    code: "4/google-code",
                    grant: .init(
                        idToken: Self.googleToken(subject: "g-1", nonce: nonce, atHash: AccessTokenHashRule.hash("ya29.a", algorithm: .rs256)),
                        accessToken: "ya29.a", refreshToken: "1//r"))
                let back = try await Self.send(client, "/auth/v1/callback?state=\(state)&code=4%2Fgoogle-code&scope=email")
                #expect(back.status == .found)
                let location = try #require(back.location)
                #expect(location.hasPrefix("http://localhost:3000/cb?next=1&code="), "\(location)")
                let code = try #require(try Self.query(location)["code"])
                #expect(rig.google.calls.last?.fields["code"] == "4/google-code")

                // A wrong verifier is refused and leaves the code usable.
                let wrong = try await Self.exchange(client, code: code, verifier: String(repeating: "w", count: 50))
                #expect(wrong.status == .badRequest)
                #expect(wrong.body["error_code"]?.stringValue == "bad_code_verifier")
                let exchanged = try await Self.exchange(client, code: code, verifier: Self.verifier)
                #expect(exchanged.status == .ok, "\(exchanged.body)")
                #expect(exchanged.body["user"]?.objectValue?["email"]?.stringValue == "g-1@example.com")
                #expect(exchanged.body["provider_token"]?.stringValue == "ya29.a")
                #expect(exchanged.body["provider_refresh_token"]?.stringValue == "1//r")
                let access = try #require(exchanged.body["access_token"]?.stringValue)
                let user = try await Self.send(client, "/auth/v1/user", headers: [.authorization: "Bearer \(access)"])
                #expect(user.status == .ok)
                #expect(user.body["app_metadata"]?.objectValue?["provider"]?.stringValue == "google")

                // Once: the code, and the state.
                let again = try await Self.exchange(client, code: code, verifier: Self.verifier)
                #expect(again.status == .notFound)
                #expect(again.body["error_code"]?.stringValue == "flow_state_not_found")
                let replayed = try await Self.send(client, "/auth/v1/callback?state=\(state)&code=4%2Fgoogle-code")
                #expect(replayed.status == .seeOther)
                let refused = try Self.query(try #require(replayed.location))
                #expect(refused["error_code"] == "bad_oauth_state")
                #expect(
                    replayed.location?.hasPrefix("https://app.example.com?") == true
                        || replayed.location?.hasPrefix("https://app.example.com/?") == true)
            }
            await rig.stop()
        }
    }

    @Test("implicit flow: the session in the fragment, and it works")
    func implicitGoogle() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            let browser = Browser()
            let sent = try await Self.authorize(
                client, extra: "redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb%23old&scopes=calendar,email", browser: browser)
            #expect(sent["scope"] == "email profile calendar")
            rig.google.register(code: "c-imp", grant: .init(idToken: Self.googleToken(subject: "g-2", nonce: sent["nonce"]), accessToken: "ya29.b"))
            let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=c-imp", browser: browser)
            #expect(browser.cookieHeader == nil, "the flow's cookie is removed at its callback")
            let location = try #require(back.location)
            #expect(location.hasPrefix("http://localhost:3000/cb#access_token="), "\(location)")
            let fragment = try Self.fragment(location)
            #expect(fragment["token_type"] == "bearer")
            #expect(fragment["provider_token"] == "ya29.b")
            #expect(fragment["provider_refresh_token"] == nil)
            #expect(fragment["sb"] == "")
            let refresh = try #require(fragment["refresh_token"])
            let access = try #require(fragment["access_token"])
            let user = try await Self.send(client, "/auth/v1/user", headers: [.authorization: "Bearer \(access)"])
            #expect(user.body["email"]?.stringValue == "g-2@example.com")
            let refreshed = try await Self.send(
                client, "/auth/v1/token?grant_type=refresh_token", method: .post, headers: [.contentType: "application/json"],
                body: "{\"refresh_token\":\"\(refresh)\"}")
            #expect(refreshed.status == .ok)
        }
        await rig.stop()
    }

    @Test("with users.disable_signup, a browser flow for a new user ends in signup_disabled at the callback (access_denied), PKCE's too")
    func signupDisabled() async throws {
        let rig = try await rig(disableSignup: true)
        try await rig.app.test(.router) { client in
            let browser = Browser()
            let sent = try await Self.authorize(client, extra: "redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb", browser: browser)
            rig.google.register(code: "c-new", grant: .init(idToken: Self.googleToken(subject: "g-new", nonce: sent["nonce"])))
            let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=c-new", browser: browser)
            let refused = try Self.query(try #require(back.location))
            #expect(refused["error"] == "access_denied")
            #expect(refused["error_code"] == "signup_disabled")
            #expect(refused["error_description"] == "Signups not allowed for this instance")

            // PKCE: GoTrue resolves the account at its callback, so the refusal is in the redirect
            // the app's page reads, not in a code that fails when exchanged.
            let started = try await Self.send(client, "/auth/v1/authorize?provider=google&" + Self.pkceQuery)
            let location = try await Self.finishAtGoogle(client, rig, started: started, subject: "g-new-pkce", code: "c-pkce")
            let pkceRefused = try Self.query(location)
            #expect(pkceRefused["error"] == "access_denied", "\(location)")
            #expect(pkceRefused["error_code"] == "signup_disabled")
            #expect(pkceRefused["code"] == nil)
            #expect(try await rig.dependencies.store.listUsers(offset: 0, limit: 10).total == 0)
        }
        await rig.stop()
    }

    @Test("implicit sign-in: the callback gives the session only to the browser that started the flow (its cookie), never to another")
    func implicitFlowBoundToTheBrowser() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            let store = rig.dependencies.store
            // Someone starts a flow in their browser and signs in at Google as themselves...
            let attacker = Browser()
            let started = try await Self.send(
                client, "/auth/v1/authorize?provider=google&redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb", browser: attacker)
            let setCookie = try #require(started.headers[.setCookie])
            let startedLocation = try #require(started.location)
            let sent = try Self.query(startedLocation)
            let state = try #require(sent["state"])
            #expect(setCookie.hasPrefix("__Host-authgate-flow-\(state)="))
            #expect(setCookie.hasSuffix("; Path=/; HttpOnly; Secure; SameSite=None; Max-Age=300"), "\(setCookie)")
            rig.google.register(code: "csrf", grant: .init(idToken: Self.googleToken(subject: "attacker-sub", nonce: sent["nonce"])))
            // ... then gets another person's browser to open the callback URL: no session for it.
            let victim = Browser()
            let back = try await Self.send(client, "/auth/v1/callback?state=\(state)&code=csrf", browser: victim)
            let location = try #require(back.location)
            #expect(try Self.query(location)["error_code"] == "bad_oauth_state", "\(location)")
            #expect(try Self.fragment(location)["access_token"] == nil)
            #expect(back.headers[.setCookie]?.contains("Max-Age=0") == true)
            #expect(try await store.owner(ofIdentity: "google", subject: "attacker-sub") == nil)
            #expect(rig.google.calls.isEmpty, "the code was not even exchanged")
            // The state was used up: the starting browser cannot use it afterwards either.
            let late = try await Self.send(client, "/auth/v1/callback?state=\(state)&code=csrf", browser: attacker)
            let lateLocation = try #require(late.location)
            #expect(try Self.query(lateLocation)["error_code"] == "bad_oauth_state")

            // A wrong value under the flow's cookie name, the right one for another flow, or the
            // right one without `__Host-` (a name a sibling subdomain can plant) is no better.
            for forged in ["__Host-authgate-flow-\(UUID().uuidString.lowercased())=x", "__Host-authgate-flow-STATE=AAAA", "authgate-flow-STATE=VALUE"]
            {
                let browser = Browser()
                let flow = try await Self.authorize(client, extra: "redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb", browser: browser)
                let flowState = try #require(flow["state"])
                let cookieHeader = try #require(browser.cookieHeader)
                let value = String(cookieHeader.drop { $0 != "=" }.dropFirst())
                let header = cookieHeader.replacingOccurrences(of: "__Host-authgate-flow-\(flowState)=", with: "other=")
                rig.google.register(code: "f-\(flowState)", grant: .init(idToken: Self.googleToken(subject: "f", nonce: flow["nonce"])))
                let answer = try await Self.send(
                    client, "/auth/v1/callback?state=\(flowState)&code=f-\(flowState)",
                    headers: [
                        .cookie: header + "; "
                            + forged.replacingOccurrences(of: "STATE", with: flowState).replacingOccurrences(of: "VALUE", with: value)
                    ])
                let answerLocation = try #require(answer.location)
                #expect(try Self.query(answerLocation)["error_code"] == "bad_oauth_state", "\(forged)")
            }

            // The right browser, its cookie among others and over two Cookie fields (as HTTP/2 sends them): signed in.
            let browser = Browser()
            let flow = try await Self.authorize(client, extra: "redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb", browser: browser)
            rig.google.register(code: "ok", grant: .init(idToken: Self.googleToken(subject: "owner-sub", nonce: flow["nonce"])))
            var headers: HTTPFields = [.cookie: "theme=dark; sid=1"]
            let flowCookie = try #require(browser.cookieHeader)
            headers.append(HTTPField(name: .cookie, value: flowCookie))
            let signedIn = try await Self.send(client, "/auth/v1/callback?state=\(flow["state"]!)&code=ok", headers: headers)
            let signedInLocation = try #require(signedIn.location)
            #expect(try Self.fragment(signedInLocation)["access_token"] != nil)

            // PKCE flows and links set no cookie: the verifier binds them.
            let pkce = try await Self.send(client, "/auth/v1/authorize?provider=google&" + Self.pkceQuery)
            #expect(pkce.headers[.setCookie] == nil)
        }
        await rig.stop()
        // implicit_flow_cookie: false (GoTrue's behaviour): no cookie, any browser may finish the flow.
        let store = MemoryAuthStore()
        let unbound = try await self.rig(store: store, implicitFlowCookie: false)
        let startedUnbound = try await unbound.app.test(.router) { client in
            let started = try await Self.send(client, "/auth/v1/authorize?provider=google&redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb")
            #expect(started.headers[.setCookie] == nil)
            let back = try await Self.finishAtGoogle(client, unbound, started: started, subject: "u-sub", code: "u")
            #expect(try Self.fragment(back)["access_token"] != nil)
            return try await Self.send(client, "/auth/v1/authorize?provider=google&redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb")
        }
        await unbound.stop()
        // A flow started unbound (the option off then, or a gateway that did not bind flows yet)
        // is refused by a gateway that binds them: fail closed, not a way around the cookie.
        let binding = try await self.rig(store: store)
        try await binding.app.test(.router) { client in
            let back = try await Self.finishAtGoogle(client, binding, started: startedUnbound, subject: "late-sub", code: "late")
            #expect(try Self.query(back)["error_code"] == "bad_oauth_state", "\(back)")
            #expect(try Self.fragment(back)["access_token"] == nil)
            #expect(try await store.owner(ofIdentity: "google", subject: "late-sub") == nil)
        }
        await binding.stop()
    }

    @Test("Apple: form post with the user's name on first authorization, Apple's refresh token kept sealed")
    func appleFormPost() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            let sent = try await Self.authorize(client, provider: "apple", extra: Self.pkceQuery + "&login_hint=x")
            #expect(sent["response_mode"] == "form_post")
            #expect(sent["scope"] == "email name")
            #expect(sent["client_id"] == Self.servicesID)
            #expect(sent["login_hint"] == nil, "Apple takes no forwarded parameter")
            rig.apple.register(code: "c.apple", subject: "a-1", idToken: Self.appleToken(subject: "a-1", nonce: sent["nonce"]))
            let user = "{\"name\":{\"firstName\":\"Jane\",\"lastName\":\"Appleseed\"},\"email\":\"ignored@example.com\"}"
            let back = try await Self.send(
                client, "/auth/v1/callback", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: "state=\(sent["state"]!)&code=c.apple&user=\(FormFields.percentEncoded(user))")
            #expect(back.status == .found)
            let appleLocation = try #require(back.location)
            let code = try #require(try Self.query(appleLocation)["code"])
            let exchanged = try await Self.exchange(client, code: code, verifier: Self.verifier)
            #expect(exchanged.status == .ok, "\(exchanged.body)")
            let userObject = try #require(exchanged.body["user"]?.objectValue)
            #expect(userObject["user_metadata"]?.objectValue?["full_name"]?.stringValue == "Jane Appleseed")
            #expect(userObject["email"]?.stringValue == "a-1@privaterelay.appleid.com")
            let userID = try #require(userObject["id"]?.stringValue)
            let identities = try await rig.dependencies.store.identities(ofUser: userID)
            let identity = try #require(identities.first)
            let sealed = try #require(identity.sealedRefreshToken)
            let sealer = ProviderTokenSealer(key: try #require(rig.dependencies.configuration.providers.tokenEncryptionKey))
            #expect(try sealer.open(sealed, provider: "apple", subject: "a-1") == FakeAppleAPI.refreshToken(for: "c.apple"))
            #expect(identity.refreshTokenClientID == Self.servicesID)
        }
        await rig.stop()
    }

    @Test("/authorize refuses in GoTrue's order, and a refused redirect_to becomes the Referer or the site URL")
    func authorizeChecks() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            func refused(_ query: String) async throws -> String? {
                let answer = try await Self.send(client, "/auth/v1/authorize?\(query)")
                #expect(answer.status == .badRequest, "\(query)")
                #expect(answer.location == nil)
                return answer.body["msg"]?.stringValue
            }
            #expect(try await refused("provider=github") == "Unsupported provider: provider is not enabled")
            #expect(
                try await refused("provider=google&code_challenge=\(Self.challenge(Self.verifier))")
                    == "PKCE flow requires code_challenge_method and code_challenge")
            #expect(
                try await refused("provider=google&code_challenge=short&code_challenge_method=s256")
                    == "code challenge has to be between 43 and 128 characters")
            #expect(
                try await refused("provider=google&code_challenge=\(String(repeating: "%2B", count: 43))&code_challenge_method=s256")
                    == "code challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes")
            #expect(
                try await refused("provider=google&code_challenge=\(Self.challenge(Self.verifier))&code_challenge_method=md5")
                    == "Invalid code_challenge_method")
            #expect(try await refused("provider=google&provider=apple") == "A parameter is given more than once")
            #expect(try await refused("provider=google&redirect_to=%zz") == "The query string is not a valid form")

            let invite = try await Self.send(client, "/auth/v1/authorize?provider=google&invite_token=abc")
            #expect(invite.status == .notFound)

            // Each refused redirect_to: the browser comes back to the site URL (or the Referer).
            for candidate in [
                "https://evil.example/cb", "http://localhost:3000@evil.example/cb", "http://localhost:3000/cb/../../admin",
                "http://localhost:3000/cb/%2e%2e/admin", "http://127.0.0.1.evil.example/", "http://10.0.0.1/", "javascript:alert(1)"
            ] {
                let browser = Browser()
                let sent = try await Self.authorize(client, extra: "redirect_to=\(FormFields.percentEncoded(candidate))", browser: browser)
                rig.google.register(code: "c-\(sent["state"]!)", grant: .init(idToken: Self.googleToken(subject: "s", nonce: sent["nonce"])))
                let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=c-\(sent["state"]!)", browser: browser)
                let location = try #require(back.location)
                #expect(location.hasPrefix("https://app.example.com#access_token="), "\(candidate) -> \(location)")
            }
            let browser = Browser()
            let viaReferer = try await Self.send(
                client, "/auth/v1/authorize?provider=google&redirect_to=https%3A%2F%2Fevil.example",
                headers: [.referer: "http://localhost:3000/home"],
                browser: browser)
            let refererLocation = try #require(viaReferer.location)
            let state = try #require(try Self.query(refererLocation)["state"])
            let back = try await Self.send(client, "/auth/v1/callback?state=\(state)&error=access_denied", browser: browser)
            #expect(back.location == "http://localhost:3000/home?error=access_denied#error=access_denied&sb=")
        }
        await rig.stop()
    }

    @Test("callback failures go back to the app with GoTrue's error fields, and nothing is signed in")
    func callbackFailures() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            func fail(_ register: (String, String) -> Void, query: (String) -> String) async throws -> [String: String] {
                let sent = try await Self.authorize(client, extra: Self.pkceQuery)
                register(sent["state"]!, sent["nonce"]!)
                let back = try await Self.send(client, "/auth/v1/callback?" + query(sent["state"]!))
                #expect(back.status == .found)
                let location = try #require(back.location)
                #expect(location.hasPrefix("http://localhost:3000/cb?next=1&error="), "\(location)")
                #expect(try Self.fragment(location)["sb"] == "")
                return try Self.query(location)
            }
            let missing = try await fail({ _, _ in }, query: { "state=\($0)" })
            #expect(missing["error_code"] == "bad_oauth_callback")
            let refusedCode = try await fail({ _, _ in }, query: { "state=\($0)&code=unknown" })
            #expect(refusedCode["error"] == "server_error")
            #expect(refusedCode["error_description"] == "Unable to exchange external code")
            let wrongNonce = try await fail(
                { state, _ in rig.google.register(code: "n-\(state)", grant: .init(idToken: Self.googleToken(subject: "n", nonce: "f00"))) },
                query: { "state=\($0)&code=n-\($0)" })
            #expect(wrongNonce["error_description"] == "Error getting user profile from external provider")
            let otherClient = try await fail(
                { state, nonce in
                    rig.google.register(
                        code: "a-\(state)", grant: .init(idToken: Self.googleToken(subject: "a", nonce: nonce, audience: "ios-client")))
                },
                query: { "state=\($0)&code=a-\($0)" })
            #expect(otherClient["error_description"] == "Error getting user profile from external provider")
            // Google's answer whose ID token's at_hash is not its access token's.
            let strayAccessToken = try await fail(
                { state, nonce in
                    let atHash = AccessTokenHashRule.hash("ya29.other", algorithm: .rs256)
                    rig.google.register(
                        code: "h-\(state)", grant: .init(idToken: Self.googleToken(subject: "h", nonce: nonce, atHash: atHash), accessToken: "ya29.b")
                    )
                },
                query: { "state=\($0)&code=h-\($0)" })
            #expect(strayAccessToken["error_description"] == "Error getting user profile from external provider")
            let denied = try await fail({ _, _ in }, query: { "state=\($0)&error=access_denied&error_description=User+said+no" })
            #expect(denied["error"] == "access_denied")
            #expect(denied["error_description"] == "User said no")
            let users = try await rig.dependencies.store.listUsers(offset: 0, limit: 10)
            #expect(users.total == 0)

            for query in ["", "state=not-a-uuid", "state=\(UUID().uuidString)", "state=%ff"] {
                let back = try await Self.send(client, "/auth/v1/callback?\(query)")
                #expect(back.status == .seeOther, "\(query)")
                #expect(
                    back.location?.hasPrefix("https://app.example.com?error=invalid_request&error_code=bad_oauth_") == true, "\(back.location ?? "")")
            }
        }
        await rig.stop()
    }

    @Test("the code exchange: an expired flow, a user banned since the callback, and two racing exchanges (one wins)")
    func exchangeRules() async throws {
        let rig = try await rig(sealing: false)
        try await rig.app.test(.router) { client in
            func signedIn(_ subject: String) async throws -> String {
                let sent = try await Self.authorize(client, extra: Self.pkceQuery)
                rig.google.register(code: "x-\(subject)", grant: .init(idToken: Self.googleToken(subject: subject, nonce: sent["nonce"])))
                let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=x-\(subject)")
                let location = try #require(back.location)
                return try #require(try Self.query(location)["code"])
            }
            let late = try await signedIn("late")
            let service = try rig.service
            func exchangeCode(_ now: Date) async -> AuthGateError.Code? {
                do {
                    _ = try await service.exchange(authCode: late, verifier: Self.verifier, device: .unknown, now: now)
                    return nil
                } catch {
                    return (error as? AuthGateError)?.code
                }
            }
            #expect(await exchangeCode(Date().addingTimeInterval(301)) == .flowStateExpired)
            #expect(await exchangeCode(Date()) == .flowStateNotFound, "an expired code is gone after it was refused once")

            // A user who signed in before, starts a PKCE flow, and is banned before the exchange.
            let earlier = try await signedIn("banned")
            _ = try await Self.exchange(client, code: earlier, verifier: Self.verifier)
            let listed = try await rig.dependencies.store.listUsers(offset: 0, limit: 10).users
            let user = try #require(listed.first { $0.email == "banned@example.com" })
            let banned = try await signedIn("banned")
            _ = try await AdminService(store: rig.dependencies.store, logger: Logger(label: "t")).ban(user.id, until: .distantFuture, now: Date())
            let refused = try await Self.exchange(client, code: banned, verifier: Self.verifier)
            #expect(refused.body["error_code"]?.stringValue == "user_banned")
            #expect(try await rig.dependencies.store.sessions(ofUser: user.id).isEmpty, "the ban ended the earlier session; none was started")
            // Banned before the callback: refused in its redirect, as GoTrue does; no code.
            let sent = try await Self.authorize(client, extra: Self.pkceQuery)
            rig.google.register(code: "x-banned-again", grant: .init(idToken: Self.googleToken(subject: "banned", nonce: sent["nonce"])))
            let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=x-banned-again")
            let bannedAtCallback = try Self.query(try #require(back.location))
            #expect(bannedAtCallback["error"] == "access_denied")
            #expect(bannedAtCallback["error_code"] == "user_banned")
            #expect(bannedAtCallback["code"] == nil)

            let raced = try await signedIn("raced")
            let statuses = await withTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        (try? await Self.exchange(client, code: raced).status) ?? .internalServerError
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == .notFound }.count == 7, "\(statuses)")

            let empty = try await Self.send(
                client, "/auth/v1/token?grant_type=pkce", method: .post, headers: [.contentType: "application/json"], body: "{\"auth_code\":\"\"}")
            #expect(empty.status == .badRequest)
            #expect(empty.body["msg"]?.stringValue == "invalid request: both auth code and code verifier should be non-empty")
        }
        await rig.stop()
    }

    @Test("linking through the browser: an anonymous user keeps its id and gains the identity; refused without manual linking or a bearer")
    func linkIdentity() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            let signup = try await Self.send(client, "/auth/v1/signup", method: .post, headers: [.contentType: "application/json"], body: "{}")
            let anonymousID = try #require(signup.body["user"]?.objectValue?["id"]?.stringValue)
            let bearer = try #require(signup.body["access_token"]?.stringValue)
            let noBearer = try await Self.send(client, "/auth/v1/user/identities/authorize?provider=google")
            #expect(noBearer.status == .unauthorized)
            let started = try await Self.send(
                client, "/auth/v1/user/identities/authorize?provider=google&skip_http_redirect=true&" + Self.pkceQuery,
                headers: [.authorization: "Bearer \(bearer)"])
            #expect(started.status == .ok, "\(started.body)")
            let url = try #require(started.body["url"]?.stringValue)
            let sent = try Self.query(url)
            rig.google.register(code: "link-1", grant: .init(idToken: Self.googleToken(subject: "g-link", nonce: sent["nonce"])))
            let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=link-1")
            let location = try #require(back.location)
            let code = try #require(try Self.query(location)["code"])
            let exchanged = try await Self.exchange(client, code: code, verifier: Self.verifier)
            let user = try #require(exchanged.body["user"]?.objectValue)
            #expect(user["id"]?.stringValue == anonymousID)
            #expect(user["is_anonymous"] == false)
            #expect(user["email"]?.stringValue == "g-link@example.com")

            // The same Google account cannot be linked to another user.
            let other = try await Self.send(client, "/auth/v1/signup", method: .post, headers: [.contentType: "application/json"], body: "{}")
            let otherBearer = try #require(other.body["access_token"]?.stringValue)
            let again = try await Self.send(
                client, "/auth/v1/user/identities/authorize?provider=google&" + Self.pkceQuery, headers: [.authorization: "Bearer \(otherBearer)"])
            #expect(again.status == .found)
            let againLocation = try #require(again.location)
            let againSent = try Self.query(againLocation)
            rig.google.register(code: "link-2", grant: .init(idToken: Self.googleToken(subject: "g-link", nonce: againSent["nonce"])))
            let back2 = try await Self.send(client, "/auth/v1/callback?state=\(againSent["state"]!)&code=link-2")
            // Refused at the callback, as GoTrue refuses it: no code to exchange.
            let refused = try Self.query(try #require(back2.location))
            #expect(refused["error_code"] == "identity_already_exists", "\(refused)")
            #expect(refused["error"] == "server_error")
            #expect(refused["code"] == nil)
            #expect(try await rig.dependencies.store.owner(ofIdentity: "google", subject: "g-link") == anonymousID)

            // Without PKCE a link would be made at the callback, whoever finishes the flow: refused
            // (browser_flow.implicit_linking is off).
            let implicit = try await Self.send(
                client, "/auth/v1/user/identities/authorize?provider=google&skip_http_redirect=true",
                headers: [.authorization: "Bearer \(otherBearer)"])
            #expect(implicit.status == .badRequest)
            #expect(implicit.body["error_code"]?.stringValue == "validation_failed")
            #expect(implicit.body["msg"]?.stringValue == "Linking an identity needs the PKCE flow: send code_challenge and code_challenge_method")
            // A sign-in may still use the implicit flow.
            #expect(try await Self.authorize(client, extra: "redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb")["state"] != nil)
        }
        await rig.stop()
        // GoTrue's behaviour when the operator opts in: the implicit flow links at the callback.
        let opened = try await self.rig(implicitLinking: true)
        try await opened.app.test(.router) { client in
            let signup = try await Self.send(client, "/auth/v1/signup", method: .post, headers: [.contentType: "application/json"], body: "{}")
            let anonymousID = try #require(signup.body["user"]?.objectValue?["id"]?.stringValue)
            let bearer = try #require(signup.body["access_token"]?.stringValue)
            let started = try await Self.send(
                client, "/auth/v1/user/identities/authorize?provider=google", headers: [.authorization: "Bearer \(bearer)"])
            #expect(started.status == .found, "\(started.body)")
            let back = try await Self.finishAtGoogle(client, opened, started: started, subject: "g-implicit", code: "link-3")
            #expect(try Self.fragment(back)["access_token"] != nil)
            #expect(try await opened.dependencies.store.owner(ofIdentity: "google", subject: "g-implicit") == anonymousID)
        }
        await opened.stop()
        let closed = try await self.rig(manualLinking: false)
        try await closed.app.test(.router) { client in
            let signup = try await Self.send(client, "/auth/v1/signup", method: .post, headers: [.contentType: "application/json"], body: "{}")
            let bearer = try #require(signup.body["access_token"]?.stringValue)
            let refused = try await Self.send(
                client, "/auth/v1/user/identities/authorize?provider=google", headers: [.authorization: "Bearer \(bearer)"])
            #expect(refused.status == .notFound)
            #expect(refused.body["error_code"]?.stringValue == "manual_linking_disabled")
        }
        await closed.stop()
    }

    @Test(
        "an OpenID Connect provider: its endpoints from its discovery document, its scopes, its ID token checked against its issuer and the web client"
    )
    func oidcProvider() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            let started = try await Self.send(client, "/auth/v1/authorize?provider=corp&" + Self.pkceQuery + "&kc_idp_hint=github")
            let startedLocation = try #require(started.location)
            #expect(startedLocation.hasPrefix("https://id.example/auth?"), "\(startedLocation)")
            let sent = try Self.query(startedLocation)
            #expect(sent["scope"] == "openid email profile")
            #expect(sent["client_id"] == "corp-web")
            #expect(sent["kc_idp_hint"] == "github")
            let now = Int64(Date().timeIntervalSince1970)
            let token = FakeProvider.token(
                claims: [
                    "iss": .string(rig.keys.issuer), "aud": "corp-web", "sub": "emp-7", "iat": .integer(now), "exp": .integer(now + 600),
                    "email": "emp7@corp.example", "email_verified": true, "nonce": .string(sent["nonce"] ?? "")
                ], key: FakeProvider.sharedKeys[0])
            rig.corp.register(code: "corp-code", grant: .init(idToken: token))
            let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=corp-code")
            let location = try #require(back.location)
            let code = try #require(try Self.query(location)["code"])
            let exchanged = try await Self.exchange(client, code: code, verifier: Self.verifier)
            let user = try #require(exchanged.body["user"]?.objectValue)
            #expect(user["app_metadata"]?.objectValue?["provider"]?.stringValue == "corp")
            #expect(user["email"]?.stringValue == "emp7@corp.example")
            #expect(rig.keys.discoveryRequests == 1, "the endpoints are kept, not fetched per request")
        }
        await rig.stop()
        // A discovery document without the endpoints: nothing to send the browser to, 503.
        let undiscovered = try await self.rig(corpDiscovery: false)
        try await undiscovered.app.test(.router) { client in
            let refused = try await Self.send(client, "/auth/v1/authorize?provider=corp&" + Self.pkceQuery)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.body["error_code"]?.stringValue == "provider_unavailable")
            #expect(refused.location == nil)
        }
        await undiscovered.stop()
    }

    @Test("PKCE: nothing is written before the verifier; a flow someone else started (a link to their account, a sign-in) changes no account")
    func nothingBeforeTheVerifier() async throws {
        let rig = try await rig()
        try await rig.app.test(.router) { client in
            let store = rig.dependencies.store
            // The attacker starts linking Google to their own account, with their own verifier...
            let signup = try await Self.send(client, "/auth/v1/signup", method: .post, headers: [.contentType: "application/json"], body: "{}")
            let attacker = try #require(signup.body["user"]?.objectValue?["id"]?.stringValue)
            let bearer = try #require(signup.body["access_token"]?.stringValue)
            let started = try await Self.send(
                client, "/auth/v1/user/identities/authorize?provider=google&" + Self.pkceQuery, headers: [.authorization: "Bearer \(bearer)"])
            let startedLocation = try #require(started.location)
            let sent = try Self.query(startedLocation)
            // ... and the victim's browser is made to finish it at Google, as the victim.
            rig.google.register(code: "victim", grant: .init(idToken: Self.googleToken(subject: "victim-sub", nonce: sent["nonce"])))
            let back = try await Self.send(client, "/auth/v1/callback?state=\(sent["state"]!)&code=victim")
            let location = try #require(back.location)
            let code = try #require(try Self.query(location)["code"])
            #expect(try await store.owner(ofIdentity: "google", subject: "victim-sub") == nil, "linked at the callback")
            #expect(try await store.identities(ofUser: attacker).isEmpty)
            // The victim's app holds another verifier (or none): its exchange links nothing.
            let wrong = try await Self.exchange(client, code: code, verifier: String(repeating: "q", count: 64))
            #expect(wrong.body["error_code"]?.stringValue == "bad_code_verifier")
            #expect(try await store.owner(ofIdentity: "google", subject: "victim-sub") == nil)
            // Only the verifier of the browser that started the flow writes (here, the link).
            let right = try await Self.exchange(client, code: code, verifier: Self.verifier)
            #expect(right.status == .ok)
            #expect(try await store.owner(ofIdentity: "google", subject: "victim-sub") == attacker)

            // A sign-in flow: no user exists until the exchange.
            let before = try await store.listUsers(offset: 0, limit: 100).total
            let signIn = try await Self.authorize(client, extra: Self.pkceQuery)
            rig.google.register(code: "fresh", grant: .init(idToken: Self.googleToken(subject: "fresh-sub", nonce: signIn["nonce"])))
            let signedBack = try await Self.send(client, "/auth/v1/callback?state=\(signIn["state"]!)&code=fresh")
            #expect(signedBack.location?.contains("code=") == true)
            #expect(try await store.listUsers(offset: 0, limit: 100).total == before)
            #expect(try await store.owner(ofIdentity: "google", subject: "fresh-sub") == nil)
        }
        await rig.stop()
    }
}
