#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import AuthGateCore
public import Hummingbird

/// `GET /auth/v1/.well-known/jwks.json` and `GET /.well-known/jwks.json`: the public halves of
/// every signing key (active, published and retired), `Cache-Control: public, max-age=600` as
/// GoTrue sets it. Also `/.well-known/openid-configuration` under `/auth/v1`.
public struct JWKSController: Sendable {
    private let body: ByteBuffer
    private let discovery: ByteBuffer

    public init(keyRing: SigningKeyRing, issuer: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let keys = JSONValue.array(keyRing.publishedKeys.map { .object($0.publicJWK) })
        self.body = ByteBuffer(bytes: (try? encoder.encode(["keys": keys])) ?? Data("{\"keys\":[]}".utf8))
        let metadata: [String: JSONValue] = [
            "issuer": .string(issuer),
            "jwks_uri": .string(issuer + "/.well-known/jwks.json"),
            "id_token_signing_alg_values_supported": .array(Array(Set(keyRing.keys.map { JSONValue.string($0.algorithm.rawValue) }))),
        ]
        self.discovery = ByteBuffer(bytes: (try? encoder.encode(metadata)) ?? Data("{}".utf8))
    }

    public func register(on router: Router<AuthGateRequestContext>) {
        let jwks = Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=600"], body: .init(byteBuffer: body))
        router.get("/auth/v1/.well-known/jwks.json") { _, _ in jwks }
        router.get("/.well-known/jwks.json") { _, _ in jwks }
        let configuration = Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=600"], body: .init(byteBuffer: discovery))
        router.get("/auth/v1/.well-known/openid-configuration") { _, _ in configuration }
    }
}
