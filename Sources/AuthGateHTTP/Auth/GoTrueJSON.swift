public import AuthGateCore

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// GoTrue's JSON shapes for users, identities and token responses (`internal/models/user.go`,
/// `identity.go`, `internal/tokens/service.go`): `email`/`phone` always strings, dates RFC 3339
/// with fractional seconds in UTC, identities with GoTrue's inverted `identity_id` / `id`. The
/// admin API and the admin commands' `--json` use the same shapes.
public enum GoTrueJSON {
    /// RFC 3339 with fractional seconds, UTC.
    public static func timestamp(_ date: Date) -> JSONValue {
        .string(date.rfc3339WithMilliseconds)
    }

    /// A user with its identities.
    public static func user(_ user: UserRecord, identities: [IdentityRecord]) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(user.id),
            "aud": .string(user.aud),
            "role": .string(user.role),
            "email": .string(user.email ?? ""),
            "phone": .string(user.phone ?? ""),
            "app_metadata": .object(user.appMetadata),
            "user_metadata": .object(user.userMetadata),
            "identities": .array(identities.map { .object(identity($0)) }),
            "created_at": timestamp(user.createdAt),
            "updated_at": timestamp(user.updatedAt),
            "is_anonymous": .bool(user.isAnonymous)
        ]
        if let confirmed = user.emailConfirmedAt {
            object["email_confirmed_at"] = timestamp(confirmed)
            object["confirmed_at"] = timestamp(confirmed)
        }
        if let lastSignIn = user.lastSignInAt { object["last_sign_in_at"] = timestamp(lastSignIn) }
        if let banned = user.bannedUntil { object["banned_until"] = timestamp(banned) }
        if let deleted = user.deletedAt { object["deleted_at"] = timestamp(deleted) }
        return object
    }

    /// One identity.
    public static func identity(_ identity: IdentityRecord) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "identity_id": .string(identity.identityID),
            "id": .string(identity.subject),
            "user_id": .string(identity.userID),
            "identity_data": .object(identity.identityData),
            "provider": .string(identity.provider),
            "created_at": timestamp(identity.createdAt),
            "updated_at": timestamp(identity.updatedAt)
        ]
        if let lastSignIn = identity.lastSignInAt { object["last_sign_in_at"] = timestamp(lastSignIn) }
        if let email = identity.email { object["email"] = .string(email) }
        return object
    }

    /// A session as operators see it (GoTrue's `sessions` row): never a token.
    public static func sessionRecord(_ session: SessionRecord) -> [String: JSONValue] {
        [
            "id": .string(session.id),
            "user_id": .string(session.userID),
            "created_at": timestamp(session.createdAt),
            "updated_at": timestamp(session.refreshedAt),
            "refreshed_at": timestamp(session.refreshedAt),
            "aal": .string(session.aal),
            "amr": .array(session.amr.map(\.jsonValue)),
            "user_agent": session.userAgent.map(JSONValue.string) ?? .null,
            "ip": session.ip.map(JSONValue.string) ?? .null
        ]
    }

    // MARK: written directly

    /// `user(_:identities:)`'s JSON text, written member by member in sorted name order: the
    /// same bytes (a test holds them equal) without the dictionaries. `GET /user` and every token
    /// answer write it.
    static func userText(_ user: UserRecord, identities: [IdentityRecord]) -> [UInt8] {
        var object = JSONObjectWriter(capacity: 1024)
        writeUser(user, identities: identities, into: &object)
        return object.finished()
    }

    /// The token answer's JSON text (``session(_:)``'s bytes); its user's text from `users` when
    /// given (see ``UserTextCache``), else written now. The PKCE grant adds the provider's tokens
    /// (`provider_token`, `provider_refresh_token`) when it has them.
    static func sessionText(_ issued: IssuedSession, users: UserTextCache?, providerToken: String? = nil, providerRefreshToken: String? = nil)
        -> [UInt8]
    {
        var object = JSONObjectWriter(capacity: 2048)
        object.string("access_token", issued.accessToken)
        object.integer("expires_at", issued.expiresAt)
        object.integer("expires_in", issued.expiresIn)
        if let providerRefreshToken, !providerRefreshToken.isEmpty { object.string("provider_refresh_token", providerRefreshToken) }
        if let providerToken, !providerToken.isEmpty { object.string("provider_token", providerToken) }
        object.string("refresh_token", issued.refreshToken)
        object.string("token_type", "bearer")
        if let users {
            object.text("user", users.text(issued.user, identities: issued.identities))
        } else {
            object.object("user") { writeUser(issued.user, identities: issued.identities, into: &$0) }
        }
        return object.finished()
    }

    private static func writeUser(_ user: UserRecord, identities: [IdentityRecord], into object: inout JSONObjectWriter) {
        object.metadata("app_metadata", user.appMetadata)
        object.string("aud", user.aud)
        object.rfc3339("banned_until", user.bannedUntil)
        object.rfc3339("confirmed_at", user.emailConfirmedAt)
        object.rfc3339("created_at", user.createdAt)
        object.rfc3339("deleted_at", user.deletedAt)
        object.string("email", user.email ?? "")
        object.rfc3339("email_confirmed_at", user.emailConfirmedAt)
        object.string("id", user.id)
        object.objects("identities", identities) { identity, object in writeIdentity(identity, into: &object) }
        object.bool("is_anonymous", user.isAnonymous)
        object.rfc3339("last_sign_in_at", user.lastSignInAt)
        object.string("phone", user.phone ?? "")
        object.string("role", user.role)
        object.rfc3339("updated_at", user.updatedAt)
        object.metadata("user_metadata", user.userMetadata)
    }

    private static func writeIdentity(_ identity: IdentityRecord, into object: inout JSONObjectWriter) {
        object.rfc3339("created_at", identity.createdAt)
        object.string("email", identity.email)
        object.string("id", identity.subject)
        object.metadata("identity_data", identity.identityData)
        object.string("identity_id", identity.identityID)
        object.rfc3339("last_sign_in_at", identity.lastSignInAt)
        object.string("provider", identity.provider)
        object.rfc3339("updated_at", identity.updatedAt)
        object.string("user_id", identity.userID)
    }

    /// The token answer's shape; ``sessionText(_:)`` writes these bytes, and a test holds it to them.
    static func session(_ issued: IssuedSession) -> [String: JSONValue] {
        [
            "access_token": .string(issued.accessToken),
            "token_type": "bearer",
            "expires_in": .integer(issued.expiresIn),
            "expires_at": .integer(issued.expiresAt),
            "refresh_token": .string(issued.refreshToken),
            "user": .object(user(issued.user, identities: issued.identities))
        ]
    }
}
