public import AuthGateCore
import HTTPTypes

/// Turns AuthGate's internal reasons into what GoTrue would send. Internal detail stays in logs.
public enum ErrorMapping {
    /// Where the error happened: GoTrue answers the same code with different statuses in
    /// different flows (a banned user is 403 on `/user`, 400 on refresh).
    public enum Flow: Sendable {
        case idTokenGrant, refreshGrant, authenticated, signup
    }

    /// The client-facing error for `error` in `flow`: GoTrue's status, code and text. The text
    /// comes from ``text(for:)`` or the error's ``AuthGateError/clientText``, never from its
    /// message, which is for the log.
    public static func clientError(for error: AuthGateError, in flow: Flow) -> any Error {
        let text = error.clientText?.text ?? Self.text(for: error.code)
        switch error.code {
        case .malformed, .algorithmNotAllowed, .missingKeyID, .unknownKeyID, .badSignature, .issuer, .expired, .notYetValid, .issuedInFuture,
            .accessTokenMismatch:
            return OAuthError(error: "invalid request", description: "Bad ID token")
        case .missingSubject, .audience, .nonceMissing, .replayed:
            return OAuthError(error: "invalid request", description: text)
        case .nonceMismatch, .serverNonceUnknown:
            return OAuthError(error: "invalid nonce", description: text)
        case .keysUnavailable:
            return GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: text)
        case .unknownProvider:
            return GoTrueError(.badRequest, code: "validation_failed", message: text)
        case .providerDisabled:
            return GoTrueError(.badRequest, code: "provider_disabled", message: text)
        case .storeUnavailable:
            return GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: text)
        case .userBanned, .userNotFound, .sessionNotFound, .badJWT:
            return GoTrueError(
                flow == .authenticated || flow == .idTokenGrant ? .forbidden : .badRequest, code: error.code.description, message: text)
        case .noAuthorization:
            return GoTrueError(.unauthorized, code: "no_authorization", message: text)
        case .identityAlreadyExists, .emailNotConfirmed, .anonymousProviderDisabled, .signupDisabled:
            return GoTrueError(.unprocessableContent, code: error.code.description, message: text)
        case .notAdmin:
            return GoTrueError(.forbidden, code: "not_admin", message: text)
        case .identityNotFound, .singleIdentityNotDeletable, .emailConflictIdentityNotDeletable:
            return GoTrueError(.unprocessableContent, code: error.code.description, message: text)
        case .flowStateNotFound:
            return GoTrueError(.notFound, code: "flow_state_not_found", message: text)
        case .flowStateExpired:
            return GoTrueError(.unprocessableContent, code: "flow_state_expired", message: text)
        case .badCodeVerifier:
            return GoTrueError(.badRequest, code: "bad_code_verifier", message: text)
        case .reauthenticationNeeded:
            return GoTrueError(.forbidden, code: "reauthentication_needed", message: text)
        case .providerRejected:
            return GoTrueError(.badRequest, code: "provider_code_rejected", message: text)
        case .providerUnavailable, .providerCredentialsRejected:
            return GoTrueError(.serviceUnavailable, code: "provider_unavailable", message: text)
        case .providerAPINotConfigured:
            return GoTrueError(.badRequest, code: "provider_api_not_configured", message: text)
        case .validationFailed, .refreshTokenNotFound, .refreshTokenAlreadyUsed, .sessionExpired, .emailExists:
            return GoTrueError(.badRequest, code: error.code.description, message: text)
        default:
            return GoTrueError(.internalServerError, code: "unexpected_failure", message: text)
        }
    }

    /// GoTrue's text for each code (`internal/api/errors.go`, `token.go`, `auth.go`).
    static func text(for code: AuthGateError.Code) -> String {
        switch code {
        case .missingSubject: "Missing sub claim in id_token"
        case .audience: "Unacceptable audience in id_token"
        case .nonceMissing: NonceRule.presenceMessage
        case .nonceMismatch: NonceRule.mismatchMessage
        case .serverNonceUnknown: "Nonce was not issued by this server, has expired, or was already used"
        case .replayed: "ID token has already been used"
        case .keysUnavailable: "The provider's keys are unavailable; try again"
        case .unknownProvider: "Unsupported provider"
        case .providerDisabled: "Provider is not enabled"
        case .storeUnavailable: "The session store is unavailable; try again"
        case .userBanned: "User is banned"
        case .userNotFound: "User from sub claim in JWT does not exist"
        case .sessionNotFound: "Session from session_id claim in JWT does not exist"
        case .badJWT: "invalid JWT: unable to parse or verify signature"
        case .noAuthorization: "This endpoint requires a valid Bearer token"
        case .identityAlreadyExists: "Identity is already linked to another user"
        case .emailNotConfirmed: "Unverified email with the provider. A confirmation email has been sent to your provider email"
        case .anonymousProviderDisabled: "Anonymous sign-ins are disabled"
        case .signupDisabled: "Signups not allowed for this instance"
        case .notAdmin: "User not allowed"
        case .identityNotFound: "Identity doesn't exist"
        case .flowStateNotFound: "invalid flow state, no valid flow state found"
        case .flowStateExpired: "invalid flow state, flow state has expired"
        case .badCodeVerifier: "code challenge does not match previously saved code verifier"
        case .singleIdentityNotDeletable: "User must have at least 1 identity after unlinking"
        case .emailConflictIdentityNotDeletable: "Unable to unlink identity due to email conflict"
        case .reauthenticationNeeded: "Deleting the account needs a recent sign-in; sign in again"
        case .providerRejected: "The provider refused the authorization code: it was used, expired, or is for another account"
        case .providerUnavailable, .providerCredentialsRejected: "The provider could not be reached; try again"
        case .providerAPINotConfigured: "The provider's server API is not configured on this gateway"
        case .validationFailed: "Invalid request"
        case .refreshTokenNotFound: "Invalid Refresh Token: Refresh Token Not Found"
        case .refreshTokenAlreadyUsed: "Invalid Refresh Token: Already Used"
        case .sessionExpired: "Invalid Refresh Token: Session Expired"
        case .emailExists: "A user with this email address has already been registered"
        default: "Unexpected failure, please check server logs for more information"
        }
    }
}
