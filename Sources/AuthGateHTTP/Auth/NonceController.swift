public import AuthGateCore
public import Hummingbird
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/v1/nonce`: issues a single-use nonce for providers with `require_server_nonce`.
///
/// The answer is `{"nonce": "<43 base64url characters>", "expires_at": <unix seconds>}`. The
/// client passes `SHA-256(nonce)` (lower-case hex) to Apple or Google and the raw `nonce` to
/// `POST /auth/v1/token?grant_type=id_token`; AuthGate accepts each nonce once, before it expires.
public struct NonceController: Sendable {
    let issuer: ServerNonceIssuer

    public init(issuer: ServerNonceIssuer) {
        self.issuer = issuer
    }

    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.post("/auth/v1/nonce") { _, context in try await issue(context: context) }
    }

    private struct Issued: Encodable {
        let nonce: String
        let expiresAt: Int64

        enum CodingKeys: String, CodingKey {
            case nonce
            case expiresAt = "expires_at"
        }
    }

    private func issue(context: AuthGateRequestContext) async throws -> Response {
        let issued: (nonce: String, expiresAt: Date)
        do {
            issued = try await issuer.issue(now: Date())
        } catch {
            if let repeated = OutageLog.admit("nonce") {
                context.logger.error("cannot issue a nonce", metadata: ["gw.error": "\(error)", "gw.repeated": "\(repeated)"])
            }
            throw GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "The nonce store is unavailable; try again")
        }
        let body = try JSONEncoder().encode(Issued(nonce: issued.nonce, expiresAt: Int64(issued.expiresAt.timeIntervalSince1970)))
        return Response(
            status: .ok,
            headers: RequestSupport.jsonNoStoreFields,
            body: .init(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
