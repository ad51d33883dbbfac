import AuthGateCore
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// A provider's OAuth token endpoint for the browser flow's code exchange (`POST /token`,
/// `grant_type=authorization_code`), over real HTTP: it checks the client id, the client secret
/// and the `redirect_uri` as Google does, and answers each code tests register, once, with the
/// ID token (signed by the test) and the access and refresh tokens registered with it. Tests
/// queue refusals (`400 invalid_grant`, `503`) to play a provider that says no or is down.
public final class FakeOAuthTokenEndpoint: Sendable {
    /// What a code is exchanged for.
    public struct Grant: Sendable {
        public let idToken: String
        public let accessToken: String
        public let refreshToken: String?
        public init(idToken: String, accessToken: String = "ya29.access", refreshToken: String? = nil) {
            self.idToken = idToken
            self.accessToken = accessToken
            self.refreshToken = refreshToken
        }
    }

    /// One exchange asked for: the form as received.
    public struct Call: Sendable {
        public let fields: [String: String]
    }

    private struct State {
        var grants: [String: Grant] = [:]
        var calls: [Call] = []
        var refusals: [(Int, String)] = []
    }

    private let state = Mutex(State())
    private let server: LocalServer
    private let clientID: String
    private let clientSecret: String
    private let redirectURI: String

    /// The token endpoint's URL (`token_url`).
    public var tokenURL: String { server.url + "/token" }

    /// Starts an endpoint for one web client, whose codes were issued for `redirectURI`.
    public static func start(clientID: String, clientSecret: String, redirectURI: String) async throws -> FakeOAuthTokenEndpoint {
        let box = Mutex<FakeOAuthTokenEndpoint?>(nil)
        let router = Router()
        router.post("/token") { request, _ -> Response in
            guard let endpoint = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let body = try await request.body.collect(upTo: 64 * 1024)
            return endpoint.token((try? FormFields(parsing: String(buffer: body))) ?? FormFields())
        }
        let endpoint = FakeOAuthTokenEndpoint(
            server: try await LocalServer.start(router), clientID: clientID, clientSecret: clientSecret, redirectURI: redirectURI)
        box.withLock { $0 = endpoint }
        return endpoint
    }

    private init(server: LocalServer, clientID: String, clientSecret: String, redirectURI: String) {
        self.server = server
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.redirectURI = redirectURI
    }

    public func stop() async { await server.stop() }

    /// Makes `code` exchangeable, once, for `grant`.
    public func register(code: String, grant: Grant) { state.withLock { $0.grants[code] = grant } }

    /// Answers the next exchanges with these statuses and OAuth error codes, in order.
    public func queueRefusals(_ refusals: [(Int, String)]) { state.withLock { $0.refusals += refusals } }

    /// Every exchange asked for so far.
    public var calls: [Call] { state.withLock { $0.calls } }

    private func token(_ form: FormFields) -> Response {
        var fields: [String: String] = [:]
        for field in form.fields { fields[field.name] = field.value }
        let refusal: (Int, String)? = state.withLock { state in
            state.calls.append(Call(fields: fields))
            return state.refusals.isEmpty ? nil : state.refusals.removeFirst()
        }
        if let refusal { return Self.error(refusal.0, refusal.1) }
        guard fields["client_id"] == clientID, fields["client_secret"] == clientSecret else { return Self.error(401, "invalid_client") }
        guard fields["grant_type"] == "authorization_code", fields["redirect_uri"] == redirectURI, let code = fields["code"] else {
            return Self.error(400, "invalid_request")
        }
        guard let grant = state.withLock({ $0.grants.removeValue(forKey: code) }) else { return Self.error(400, "invalid_grant") }
        var body: [String: JSONValue] = [
            "access_token": .string(grant.accessToken), "token_type": "Bearer", "expires_in": 3599, "id_token": .string(grant.idToken)
        ]
        if let refreshToken = grant.refreshToken { body["refresh_token"] = .string(refreshToken) }
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(body).serialized())))
    }

    private static func error(_ status: Int, _ code: String) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\"\(code)\"}")))
    }
}
