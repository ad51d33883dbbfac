import Crypto

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A PKCE flow whose callback verified the provider's ID token: kept under its authorization
/// code (hashed) until `POST /token?grant_type=pkce` presents the code with the verifier that
/// answers the challenge, once, within the flow's lifetime. Nothing is written to the account
/// before that: the identity waits here, so a flow that someone else started (a link to their
/// account, a sign-in as them) changes nothing unless the browser that started it finishes it.
public struct FlowCode: Sendable {
    /// Who the provider's ID token proved the user to be (its single use already taken).
    public var identity: VerifiedIdentity
    /// The user the identity is linked to; nil for a sign-in.
    public var linkingTarget: String?
    public var challenge: PKCEChallenge
    /// When the flow began (`/authorize`).
    public var createdAt: Date
    /// The provider's access and refresh tokens, sealed (``ProviderTokenSealer``), when AuthGate
    /// has a token encryption key to keep them with; nil otherwise.
    public var sealedProviderToken: String?
    public var sealedProviderRefreshToken: String?

    /// The store key of an authorization code: its SHA-256, so the store never holds the code.
    static func storeKey(code: String) -> String {
        var hasher = SHA256()
        hasher.update(utf8: code)
        return "flow:code:" + Base64URL.hex(hasher.finalize())
    }

    init(
        identity: VerifiedIdentity, linkingTarget: String?, challenge: PKCEChallenge, createdAt: Date, sealedProviderToken: String?,
        sealedProviderRefreshToken: String?
    ) {
        self.identity = identity
        self.linkingTarget = linkingTarget
        self.challenge = challenge
        self.createdAt = createdAt
        self.sealedProviderToken = sealedProviderToken
        self.sealedProviderRefreshToken = sealedProviderRefreshToken
    }

    var encoded: String {
        var object: [String: JSONValue] = [
            "v": 1, "i": .object(Self.encode(identity)), "c": .string(challenge.challenge), "m": .string(challenge.method.rawValue),
            "t": .integer(createdAt.unixMilliseconds(rounded: .down))
        ]
        if let linkingTarget { object["l"] = .string(linkingTarget) }
        if let sealedProviderToken { object["pt"] = .string(sealedProviderToken) }
        if let sealedProviderRefreshToken { object["prt"] = .string(sealedProviderRefreshToken) }
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }

    init?(encoded text: String) {
        guard let object = (try? JSONValue.parse(Array(text.utf8)))?.objectValue, object["v"]?.integerValue == 1,
            let identity = object["i"]?.objectValue.flatMap(Self.decode), let challenge = object["c"]?.stringValue,
            let method = object["m"]?.stringValue.flatMap(PKCEChallenge.Method.init(rawValue:)), let created = object["t"]?.integerValue
        else { return nil }
        self.init(
            identity: identity, linkingTarget: object["l"]?.stringValue, challenge: PKCEChallenge(challenge: challenge, method: method),
            createdAt: Self.date(created), sealedProviderToken: object["pt"]?.stringValue, sealedProviderRefreshToken: object["prt"]?.stringValue)
    }

    private static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    private static func milliseconds(_ date: Date) -> JSONValue { .integer(date.unixMilliseconds(rounded: .down)) }

    /// A verified identity as stored: every field, the claims and `identity_data` as they are.
    private static func encode(_ identity: VerifiedIdentity) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "provider": .string(identity.provider), "subject": .string(identity.subject), "email_verified": .bool(identity.emailVerified),
            "issuer": .string(identity.issuer), "expires_at": milliseconds(identity.expiresAt), "claims": .object(identity.claims),
            "identity_data": .object(identity.identityData), "token_hash": .string(identity.tokenHash)
        ]
        let optional: [(String, String?)] = [
            ("email", identity.email), ("name", identity.name), ("picture", identity.picture), ("sealed_refresh_token", identity.sealedRefreshToken),
            ("refresh_token_client_id", identity.refreshTokenClientID)
        ]
        for (name, value) in optional { if let value { object[name] = .string(value) } }
        if let issuedAt = identity.issuedAt { object["issued_at"] = milliseconds(issuedAt) }
        return object
    }

    private static func decode(_ object: [String: JSONValue]) -> VerifiedIdentity? {
        guard let provider = object["provider"]?.stringValue, let subject = object["subject"]?.stringValue,
            case .bool(let emailVerified)? = object["email_verified"], let issuer = object["issuer"]?.stringValue,
            let expiresAt = object["expires_at"]?.integerValue, let claims = object["claims"]?.objectValue,
            let identityData = object["identity_data"]?.objectValue, let tokenHash = object["token_hash"]?.stringValue
        else { return nil }
        var identity = VerifiedIdentity(
            provider: provider, subject: subject, email: object["email"]?.stringValue, emailVerified: emailVerified,
            name: object["name"]?.stringValue, picture: object["picture"]?.stringValue, issuer: issuer, expiresAt: date(expiresAt),
            issuedAt: object["issued_at"]?.integerValue.map(date), claims: claims, identityData: identityData, tokenHash: tokenHash)
        identity.sealedRefreshToken = object["sealed_refresh_token"]?.stringValue
        identity.refreshTokenClientID = object["refresh_token_client_id"]?.stringValue
        return identity
    }
}
