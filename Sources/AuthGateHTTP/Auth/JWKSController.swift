public import AuthGateCore
public import Hummingbird
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `GET /auth/v1/.well-known/jwks.json` and `GET /.well-known/jwks.json`: the public halves of
/// every signing key (active, published and retired), `Cache-Control: public, max-age=600` as
/// GoTrue sets it. Also `/.well-known/openid-configuration` under `/auth/v1`.
public struct JWKSController: Sendable {
    /// How long clients may cache the documents (GoTrue's value): the least time to wait between
    /// publishing a new key and making it active.
    public static let maxAge = 600

    private let keys: SigningKeys
    private let issuer: String
    private let documents = Documents()

    /// The encoded documents of one ring generation.
    private final class Documents: Sendable {
        let cached = Mutex<(generation: Int, jwks: ByteBuffer, discovery: ByteBuffer)?>(nil)
    }

    public init(keys: SigningKeys, issuer: String) {
        self.keys = keys
        self.issuer = issuer
    }

    public init(keyRing: SigningKeyRing, issuer: String) {
        self.init(keys: SigningKeys(keyRing), issuer: issuer)
    }

    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.get("/auth/v1/.well-known/jwks.json") { _, _ in response(current().jwks) }
        router.get("/.well-known/jwks.json") { _, _ in response(current().jwks) }
        router.get("/auth/v1/.well-known/openid-configuration") { _, _ in response(current().discovery) }
    }

    private func response(_ body: ByteBuffer) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=\(Self.maxAge)"], body: .init(byteBuffer: body))
    }

    /// The documents for the ring in force, encoded once per ring.
    private func current() -> (jwks: ByteBuffer, discovery: ByteBuffer) {
        let (ring, generation) = keys.versioned
        if let cached = documents.cached.withLock({ $0 }), cached.generation == generation { return (cached.jwks, cached.discovery) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let published = JSONValue.array(ring.publishedKeys.map { .object($0.publicJWK) })
        let jwks = ByteBuffer(bytes: (try? encoder.encode(["keys": published])) ?? Data("{\"keys\":[]}".utf8))
        let metadata: [String: JSONValue] = [
            "issuer": .string(issuer),
            "jwks_uri": .string(issuer + "/.well-known/jwks.json"),
            "id_token_signing_alg_values_supported": .array(Array(Set(ring.keys.map { JSONValue.string($0.algorithm.rawValue) })))
        ]
        let discovery = ByteBuffer(bytes: (try? encoder.encode(metadata)) ?? Data("{}".utf8))
        documents.cached.withLock { $0 = (generation, jwks, discovery) }
        return (jwks, discovery)
    }
}
