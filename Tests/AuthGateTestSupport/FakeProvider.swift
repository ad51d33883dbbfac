public import AuthGateCore
import Crypto
public import Foundation
import Hummingbird
import NIOCore
import Synchronization
public import _CryptoExtras

/// A local OpenID provider for tests: RSA keys of our own, a JWKS (and discovery document)
/// served over real HTTP on a loopback port, and tokens signed with those keys.
///
/// Tests change what it serves (keys, extra raw JWK entries, `Cache-Control`, outages) and read
/// how many JWKS requests it answered.
public final class FakeProvider: Sendable {
    /// A signing key: its `kid` and RSA private key.
    public struct Key: Sendable {
        public let kid: String
        public let privateKey: _RSA.Signing.PrivateKey
    }

    private struct State {
        var keys: [Key] = []
        var extraEntries: [String] = []
        var cacheControl: String? = "public, max-age=3600"
        var age: String?
        var isDown = false
        var isDiscoveryDown = false
        var jwksRequests = 0
        var authorizationEndpoint: String?
        var tokenEndpoint: String?
        var discoveryRequests = 0
    }

    private let state = Mutex(State())
    private let server: LocalServer
    /// The loopback port it listens on.
    public var port: Int { server.port }

    /// Three RSA-2048 keys made once per test process (key generation is slow in debug builds).
    public static let sharedKeys: [Key] = (1...3).compactMap { index in
        (try? _RSA.Signing.PrivateKey(keySize: .bits2048)).map { Key(kid: "fake-key-\(index)", privateKey: $0) }
    }

    /// `http://127.0.0.1:<port>`: the issuer.
    public var issuer: String { "http://127.0.0.1:\(port)" }
    /// Where the JWKS is served.
    public var jwksURL: String { issuer + "/jwks" }

    /// Starts serving; `keys` are published at once.
    public static func start(keys: [Key]) async throws -> FakeProvider {
        let box = Mutex<FakeProvider?>(nil)
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            guard let provider = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return provider.jwksResponse()
        }
        // The JWKS behind a redirect to a path on the same origin, and a redirect to itself.
        router.get("/moved") { _, _ in Response(status: .found, headers: [.location: "/jwks"]) }
        router.get("/loop") { _, _ in Response(status: .found, headers: [.location: "/loop"]) }
        router.get("/.well-known/openid-configuration") { _, _ -> Response in
            guard let provider = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return provider.discoveryResponse()
        }
        let provider = FakeProvider(server: try await LocalServer.start(router))
        provider.state.withLock { $0.keys = keys }
        box.withLock { $0 = provider }
        return provider
    }

    private init(server: LocalServer) { self.server = server }

    /// Stops serving.
    public func stop() async {
        await server.stop()
    }

    /// Publishes exactly these keys.
    public func publish(_ keys: [Key]) { state.withLock { $0.keys = keys } }
    /// Adds raw JWK JSON objects to the served set (an `oct` key, an `enc` key, junk).
    public func addRawEntries(_ entries: [String]) { state.withLock { $0.extraEntries += entries } }
    /// Sets the `Cache-Control` and `Age` headers of JWKS responses (nil: none).
    public func setCaching(cacheControl: String?, age: String? = nil) {
        state.withLock {
            $0.cacheControl = cacheControl
            $0.age = age
        }
    }
    /// When down, the JWKS endpoint and the discovery document answer 503.
    public func setDown(_ isDown: Bool) { state.withLock { $0.isDown = isDown } }
    /// When down, the discovery document alone answers 503 (the JWKS endpoint still answers).
    public func setDiscoveryDown(_ isDown: Bool) { state.withLock { $0.isDiscoveryDown = isDown } }
    /// JWKS requests answered so far (any status).
    public var jwksRequests: Int { state.withLock { $0.jwksRequests } }
    /// Adds `authorization_endpoint` and `token_endpoint` to the discovery document (nil: left out).
    public func setEndpoints(authorization: String?, token: String?) {
        state.withLock {
            $0.authorizationEndpoint = authorization
            $0.tokenEndpoint = token
        }
    }
    /// Discovery document requests answered so far.
    public var discoveryRequests: Int { state.withLock { $0.discoveryRequests } }

    private func discoveryResponse() -> Response {
        let snapshot = state.withLock { state -> State in
            state.discoveryRequests += 1
            return state
        }
        if snapshot.isDown || snapshot.isDiscoveryDown { return Response(status: .serviceUnavailable) }
        var fields = ["\"issuer\":\"\(issuer)\"", "\"jwks_uri\":\"\(jwksURL)\""]
        if let url = snapshot.authorizationEndpoint { fields.append("\"authorization_endpoint\":\"\(url)\"") }
        if let url = snapshot.tokenEndpoint { fields.append("\"token_endpoint\":\"\(url)\"") }
        let body = "{" + fields.joined(separator: ",") + "}"
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private func jwksResponse() -> Response {
        let snapshot = state.withLock { state -> State in
            state.jwksRequests += 1
            return state
        }
        if snapshot.isDown { return Response(status: .serviceUnavailable) }
        let entries = snapshot.keys.map(Self.publicJWK) + snapshot.extraEntries
        var headers: HTTPFields = [.contentType: "application/json"]
        if let cacheControl = snapshot.cacheControl { headers[.cacheControl] = cacheControl }
        if let age = snapshot.age { headers[.age] = age }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "{\"keys\":[\(entries.joined(separator: ","))]}")))
    }

    /// A key's public JWK: `{"kty":"RSA","kid":…,"use":"sig","alg":"RS256","n":…,"e":…}`.
    public static func publicJWK(_ key: Key) -> String {
        let components = (try? key.privateKey.publicKey.getKeyPrimitives())
        let modulus = components.map { base64URL(Array($0.modulus)) } ?? ""
        let exponent = components.map { base64URL(Array($0.publicExponent)) } ?? ""
        return "{\"kty\":\"RSA\",\"kid\":\"\(key.kid)\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"\(modulus)\",\"e\":\"\(exponent)\"}"
    }

    /// A JWKS document with these keys.
    public static func jwks(_ keys: [Key]) -> String { "{\"keys\":[\(keys.map(publicJWK).joined(separator: ","))]}" }

    /// A token with `claims`, signed RS256 by `key` (header `kid` = `kid ?? key.kid`).
    public static func token(claims: [String: JSONValue], key: Key, kid: String? = nil, algorithm: String = "RS256") -> String {
        var header: [String: JSONValue] = ["alg": .string(algorithm), "typ": .string("JWT")]
        if let kid = kid ?? Optional(key.kid), !kid.isEmpty { header["kid"] = .string(kid) }
        let signingInput = base64URL(json(header)) + "." + base64URL(json(claims))
        let signature =
            (try? key.privateKey.signature(for: SHA256.hash(data: Array(signingInput.utf8)), padding: .insecurePKCS1v1_5))
            .map { Array($0.rawRepresentation) } ?? []
        return signingInput + "." + base64URL(signature)
    }

    /// A token with an arbitrary header, payload and signature bytes (for malformed-token tests).
    public static func unsignedToken(header: [String: JSONValue], claims: [String: JSONValue], signature: [UInt8] = Array(repeating: 7, count: 256))
        -> String
    {
        base64URL(json(header)) + "." + base64URL(json(claims)) + "." + base64URL(signature)
    }

    /// Standard claims for `issuer`/`audience`, issued now and valid for an hour.
    public static func claims(issuer: String, audience: String, subject: String = "user-1", now: Date = Date(), extra: [String: JSONValue] = [:])
        -> [String: JSONValue]
    {
        let issuedAt = Int64(now.timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(subject), "iat": .integer(issuedAt),
            "exp": .integer(issuedAt + 3600), "email": .string("Person@Example.com"), "email_verified": .bool(true)
        ]
        claims.merge(extra) { _, new in new }
        return claims
    }

    static func json(_ value: [String: JSONValue]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data())
    }

    /// Unpadded base64url.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().map { $0 == "+" ? "-" : ($0 == "/" ? "_" : $0) }.filter { $0 != "=" })
    }
}
