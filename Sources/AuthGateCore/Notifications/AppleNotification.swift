#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// One of Apple's server-to-server notifications for Sign in with Apple, verified: the JWS's
/// `events` claim (a JSON document in a string) decoded.
public struct AppleNotification: Sendable, Equatable {
    /// `consent-revoked`, `account-delete`, `email-disabled`, `email-enabled`, or a type Apple adds later.
    public let type: String
    /// The Apple user (`sub` of its ID tokens).
    public let subject: String
    /// When the event happened (`event_time`, milliseconds).
    public let eventTime: Date
    /// The relay email an `email-*` event concerns.
    public let email: String?
    public let isPrivateEmail: Bool?
    /// The notification's `jti`: each is acted on once.
    public let id: String
    /// The JWS's `exp`: its single-use record may be forgotten after it.
    public let expiresAt: Date

    public static let consentRevoked = "consent-revoked"
    public static let accountDelete = "account-delete"
    /// The spelling Apple's current page gives the same event; read as ``accountDelete``.
    static let accountDeleted = "account-deleted"
    public static let emailDisabled = "email-disabled"
    public static let emailEnabled = "email-enabled"
}

/// Verifies Apple's notification JWS like an ID token (signature by `kid` against Apple's key set
/// with the configured algorithm, issuer, audience from the Apple provider's list, expiry), then
/// decodes its events.
public struct AppleNotificationVerifier: Sendable {
    private let check: IDTokenCheck

    public init(verifier: AppleVerifier) {
        self.check = IDTokenCheck(configuration: verifier.configuration, keySet: verifier.keySet, purpose: .serverNotification)
    }

    /// - Throws: ``AuthGateError`` with the verification reason, or `malformed` for events that do
    ///   not decode.
    public func verify(_ payload: String, now: Date) async throws -> AppleNotification {
        let verified = try await check.run(idToken: payload, rawNonce: nil, now: now)
        guard let id = verified.claims["jti"]?.stringValue, !id.isEmpty else { throw AuthGateError(.malformed, "the notification has no jti") }
        guard let text = verified.claims["events"]?.stringValue, let events = (try? JSONValue.parse(Array(text.utf8)))?.objectValue else {
            throw AuthGateError(.malformed, "events is not a JSON document in a string")
        }
        guard let type = events["type"]?.stringValue, !type.isEmpty, let subject = events["sub"]?.stringValue, !subject.isEmpty else {
            throw AuthGateError(.malformed, "events lacks type or sub")
        }
        guard let milliseconds = events["event_time"]?.integerValue else { throw AuthGateError(.malformed, "events lacks event_time") }
        return AppleNotification(
            type: type == AppleNotification.accountDeleted ? AppleNotification.accountDelete : type, subject: subject,
            eventTime: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
            email: events["email"]?.stringValue, isPrivateEmail: events["is_private_email"]?.lenientBoolValue, id: id, expiresAt: verified.expiresAt
        )
    }
}
