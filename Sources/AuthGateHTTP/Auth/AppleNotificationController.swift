public import AuthGateCore
public import Hummingbird
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/v1/apple/notifications` with `{"payload": "<JWS>"}`: Apple's server-to-server
/// notifications for Sign in with Apple (consent revoked, account deleted, relay email turned
/// off or on). 200 once acted on (or acknowledged, for an unknown event or user); 400 in GoTrue's
/// shape for a payload that does not verify, does not decode or was already handled; never a 5xx
/// for a bad payload (503 only when Apple's keys or the store cannot be reached, so Apple retries).
public struct AppleNotificationController: Sendable {
    let service: AppleNotificationService

    public init(service: AppleNotificationService) {
        self.service = service
    }

    struct Body: Decodable {
        let payload: String?
    }

    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.post("/auth/v1/apple/notifications") { request, context in try await receive(request, context) }
    }

    private func receive(_ request: Request, _ context: AuthGateRequestContext) async throws -> Response {
        let body = try await RequestSupport.decode(Body.self, from: request, limit: RequestSupport.tokenBodyBytes)
        guard let payload = body.payload, !payload.isEmpty else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "payload is required")
        }
        do {
            let (notification, outcome) = try await service.handle(payload, now: Date())
            return try RequestSupport.json(["type": .string(notification.type), "outcome": .string(outcome.rawValue)])
        } catch let error as AuthGateError where error.code == .keysUnavailable || error.code == .storeUnavailable {
            if let repeated = OutageLog.admit("apple notification \(error.code)") {
                context.logger.error("apple notification not handled", metadata: ["gw.reason": "\(error.code)", "gw.repeated": "\(repeated)"])
            }
            throw GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "Try again later")
        } catch let error as AuthGateError {
            // The endpoint is open to anyone: each refusal keeps its access line (with the
            // reason), the notice is written once per 10 s per reason.
            context.outcome.reason = error.code.description
            if let repeated = OutageLog.admit("apple notification refused \(error.code)") {
                context.logger.notice("apple notification refused", metadata: ["gw.reason": "\(error.code)", "gw.repeated": "\(repeated)"])
            }
            throw GoTrueError(.badRequest, code: "validation_failed", message: "Invalid notification: \(error.code)")
        }
    }
}
