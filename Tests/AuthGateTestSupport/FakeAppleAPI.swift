import AuthGateCore
public import Crypto
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// A local stand-in for Apple's REST API (`/auth/token` with `grant_type=authorization_code`,
/// `/auth/revoke`), over real HTTP: it checks each call's `client_secret` (ES256 signature with
/// the team's public key, `iss`, `sub` = `client_id`, `aud`, `exp`) as Apple does, exchanges
/// the codes tests register, and records every revocation. Tests queue the statuses it answers
/// (`503`, `400 invalid_grant`, …) to play an Apple that is down or refuses. It also plays
/// Google's revocation endpoint at `/google/revoke` (form field `token`, no client
/// authentication), answering from the same queue.
public final class FakeAppleAPI: Sendable {
    /// One answer to play: an HTTP status and the OAuth `error` code for a 4xx.
    public struct Answer: Sendable {
        public let status: Int
        public let error: String?
        public init(status: Int, error: String? = nil) {
            self.status = status
            self.error = error
        }
    }

    /// A revocation Apple accepted or refused.
    public struct RevokeCall: Sendable, Hashable {
        public let clientID: String
        public let token: String
        public let tokenTypeHint: String?
        public let status: Int
    }

    private struct State {
        /// code → Apple subject its ID token names.
        var codes: [String: String] = [:]
        /// code → the ID token to answer with (signed by the test), in place of an unsigned one.
        var idTokens: [String: String] = [:]
        var usedCodes: Set<String> = []
        var revokeAnswers: [Answer] = []
        var revokes: [RevokeCall] = []
        var googleRevokes: [RevokeCall] = []
        var tokenCalls = 0
        var refusedSecrets = 0
    }

    private let state = Mutex(State())
    private let server: LocalServer
    private let teamID: String
    private let keyID: String
    private let publicKey: P256.Signing.PublicKey

    /// `http://127.0.0.1:<port>`: the `api_url` to configure.
    public var url: String { server.url }

    /// Starts serving for a team whose Sign in with Apple key is `publicKey` (`kid` `keyID`).
    public static func start(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) async throws -> FakeAppleAPI {
        let box = Mutex<FakeAppleAPI?>(nil)
        let router = Router()
        router.post("/auth/token") { request, _ -> Response in
            guard let api = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return api.token(try await Self.form(request))
        }
        router.post("/auth/revoke") { request, _ -> Response in
            guard let api = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return api.revoke(try await Self.form(request))
        }
        router.post("/google/revoke") { request, _ -> Response in
            guard let api = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return api.googleRevoke(try await Self.form(request))
        }
        let api = FakeAppleAPI(server: try await LocalServer.start(router), teamID: teamID, keyID: keyID, publicKey: publicKey)
        box.withLock { $0 = api }
        return api
    }

    private init(server: LocalServer, teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
        self.server = server
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
    }

    public func stop() async { await server.stop() }

    /// Makes `code` exchangeable (once) for a refresh token of the Apple account `subject`.
    public func register(code: String, subject: String) { state.withLock { $0.codes[code] = subject } }

    /// Makes `code` exchangeable (once) for Apple's tokens with `idToken` (signed by the test, with
    /// the nonce and audience the browser flow expects).
    public func register(code: String, subject: String, idToken: String) {
        state.withLock {
            $0.codes[code] = subject
            $0.idTokens[code] = idToken
        }
    }

    /// The refresh token Apple hands out for `code`.
    public static func refreshToken(for code: String) -> String { "r.apple-refresh-\(code)" }

    /// Answers the next revocations with these, in order (then 200).
    public func queueRevokeAnswers(_ answers: [Answer]) { state.withLock { $0.revokeAnswers += answers } }

    /// Every revocation call so far.
    public var revokes: [RevokeCall] { state.withLock { $0.revokes } }
    /// Every call to the Google revocation endpoint so far (`clientID` empty).
    public var googleRevokes: [RevokeCall] { state.withLock { $0.googleRevokes } }
    /// The Google revocation endpoint's URL.
    public var googleRevocationURL: String { url + "/google/revoke" }
    /// How many code exchanges were asked for.
    public var tokenCalls: Int { state.withLock { $0.tokenCalls } }
    /// Calls refused for a bad client secret.
    public var refusedSecrets: Int { state.withLock { $0.refusedSecrets } }

    private func token(_ form: [String: String]) -> Response {
        state.withLock { $0.tokenCalls += 1 }
        guard let clientID = form["client_id"], secretIsValid(form["client_secret"], clientID: clientID) else {
            state.withLock { $0.refusedSecrets += 1 }
            return Self.error(400, "invalid_client")
        }
        guard form["grant_type"] == "authorization_code", let code = form["code"] else { return Self.error(400, "invalid_request") }
        let subject: String? = state.withLock { state in
            guard !state.usedCodes.contains(code), let subject = state.codes[code] else { return nil }
            state.usedCodes.insert(code)
            return subject
        }
        guard let subject else { return Self.error(400, "invalid_grant") }
        let now = Int64(Date().timeIntervalSince1970)
        let idToken =
            state.withLock { $0.idTokens[code] }
            ?? FakeProvider.unsignedToken(
                header: ["alg": "RS256", "kid": "apple-fake"],
                claims: [
                    "iss": "https://appleid.apple.com", "aud": .string(clientID), "sub": .string(subject), "iat": .integer(now),
                    "exp": .integer(now + 600)
                ])
        let body =
            "{\"access_token\":\"a.apple\",\"token_type\":\"Bearer\",\"expires_in\":3600,"
            + "\"refresh_token\":\"\(Self.refreshToken(for: code))\",\"id_token\":\"\(idToken)\"}"
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private func revoke(_ form: [String: String]) -> Response {
        guard let clientID = form["client_id"], secretIsValid(form["client_secret"], clientID: clientID), let token = form["token"] else {
            state.withLock { $0.refusedSecrets += 1 }
            return Self.error(400, "invalid_client")
        }
        let answer = state.withLock { state -> Answer in
            let answer = state.revokeAnswers.isEmpty ? Answer(status: 200) : state.revokeAnswers.removeFirst()
            state.revokes.append(RevokeCall(clientID: clientID, token: token, tokenTypeHint: form["token_type_hint"], status: answer.status))
            return answer
        }
        if answer.status == 200 { return Response(status: .ok) }
        return Self.error(answer.status, answer.error)
    }

    private func googleRevoke(_ form: [String: String]) -> Response {
        guard let token = form["token"] else { return Self.error(400, "invalid_request") }
        let answer = state.withLock { state -> Answer in
            let answer = state.revokeAnswers.isEmpty ? Answer(status: 200) : state.revokeAnswers.removeFirst()
            state.googleRevokes.append(RevokeCall(clientID: "", token: token, tokenTypeHint: form["token_type_hint"], status: answer.status))
            return answer
        }
        if answer.status == 200 { return Response(status: .ok) }
        return Self.error(answer.status, answer.error)
    }

    /// Apple's checks of a client secret.
    private func secretIsValid(_ secret: String?, clientID: String) -> Bool {
        guard let secret else { return false }
        let parts = secret.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]), let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            publicKey.isValidSignature(ecdsa, for: Array("\(parts[0]).\(parts[1])".utf8)),
            let headerFields = (try? JSONValue.parse(header))?.objectValue, let claims = (try? JSONValue.parse(payload))?.objectValue
        else { return false }
        let now = Int64(Date().timeIntervalSince1970)
        return headerFields["alg"]?.stringValue == "ES256" && headerFields["kid"]?.stringValue == keyID
            && claims["iss"]?.stringValue == teamID && claims["sub"]?.stringValue == clientID
            && claims["aud"]?.stringValue == "https://appleid.apple.com" && (claims["exp"]?.integerValue ?? 0) > now
    }

    private static func error(_ status: Int, _ code: String?) -> Response {
        let body = code.map { "{\"error\":\"\($0)\"}" } ?? ""
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private static func form(_ request: Request) async throws -> [String: String] {
        let body = try await request.body.collect(upTo: 64 * 1024)
        var fields: [String: String] = [:]
        for pair in String(buffer: body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let name = String(parts[0]).removingPercentEncoding ?? ""
            fields[name] = String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return fields
    }
}
