public import AuthGateCore
import HTTPTypes

/// Turns AuthGate's internal reasons into what GoTrue would send. Internal detail stays in logs.
public enum ErrorMapping {
    /// Where the error happened: GoTrue answers the same code with different statuses in
    /// different flows (a banned user is 403 on `/user`, 400 on refresh).
    public enum Flow: Sendable {
        case idTokenGrant, refreshGrant, authenticated, signup
    }

    /// The client-facing error for `error` in `flow`.
    public static func clientError(for error: AuthGateError, in flow: Flow) -> any Error {
        switch error.code {
        case .malformed, .algorithmNotAllowed, .missingKeyID, .unknownKeyID, .badSignature, .issuer, .expired, .notYetValid, .issuedInFuture:
            return OAuthError(error: "invalid request", description: "Bad ID token")
        case .missingSubject:
            return OAuthError(error: "invalid request", description: "Missing sub claim in id_token")
        case .audience, .nonceMissing:
            return OAuthError(error: "invalid request", description: error.message)
        case .nonceMismatch:
            return OAuthError(error: "invalid nonce", description: NonceRule.mismatchMessage)
        case .serverNonceUnknown:
            return OAuthError(error: "invalid nonce", description: "Nonce was not issued by this server, has expired, or was already used")
        case .replayed:
            return OAuthError(error: "invalid request", description: "ID token has already been used")
        case .keysUnavailable:
            return GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "The provider's keys are unavailable; try again")
        case .unknownProvider:
            return GoTrueError(.badRequest, code: "validation_failed", message: error.message)
        case .providerDisabled:
            return GoTrueError(.badRequest, code: "provider_disabled", message: error.message)
        case .storeUnavailable:
            return GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "The session store is unavailable; try again")
        case .userBanned, .userNotFound, .sessionNotFound, .badJWT:
            return GoTrueError(flow == .authenticated || flow == .idTokenGrant ? .forbidden : .badRequest, code: error.code.description, message: error.message)
        case .noAuthorization:
            return GoTrueError(.unauthorized, code: "no_authorization", message: error.message)
        case .identityAlreadyExists, .emailNotConfirmed, .anonymousProviderDisabled:
            return GoTrueError(.unprocessableContent, code: error.code.description, message: error.message)
        case .notAdmin:
            return GoTrueError(.forbidden, code: "not_admin", message: error.message)
        case .validationFailed, .refreshTokenNotFound, .refreshTokenAlreadyUsed, .sessionExpired, .emailExists:
            return GoTrueError(.badRequest, code: error.code.description, message: error.message)
        default:
            return GoTrueError(.internalServerError, code: "unexpected_failure", message: "Unexpected failure, please check server logs for more information")
        }
    }
}
