import Crypto

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A PKCE flow whose callback signed its user in: kept under its authorization code (hashed)
/// until `POST /token?grant_type=pkce` presents the code with the verifier that answers the
/// challenge, once, within the flow's lifetime.
public struct FlowCode: Sendable, Hashable {
    /// The user the callback signed in.
    public var userID: String
    public var provider: String
    /// The provider identity's subject (what the provider tokens are sealed for).
    public var subject: String
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

    var encoded: String {
        var object: [String: JSONValue] = [
            "v": 1, "u": .string(userID), "p": .string(provider), "s": .string(subject), "c": .string(challenge.challenge),
            "m": .string(challenge.method.rawValue), "t": .integer(createdAt.unixMilliseconds(rounded: .down))
        ]
        if let sealedProviderToken { object["pt"] = .string(sealedProviderToken) }
        if let sealedProviderRefreshToken { object["prt"] = .string(sealedProviderRefreshToken) }
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }

    init(
        userID: String, provider: String, subject: String, challenge: PKCEChallenge, createdAt: Date, sealedProviderToken: String?,
        sealedProviderRefreshToken: String?
    ) {
        self.userID = userID
        self.provider = provider
        self.subject = subject
        self.challenge = challenge
        self.createdAt = createdAt
        self.sealedProviderToken = sealedProviderToken
        self.sealedProviderRefreshToken = sealedProviderRefreshToken
    }

    init?(encoded text: String) {
        guard let object = (try? JSONValue.parse(Array(text.utf8)))?.objectValue, object["v"]?.integerValue == 1,
            let userID = object["u"]?.stringValue, let provider = object["p"]?.stringValue, let subject = object["s"]?.stringValue,
            let challenge = object["c"]?.stringValue, let method = object["m"]?.stringValue.flatMap(PKCEChallenge.Method.init(rawValue:)),
            let created = object["t"]?.integerValue
        else { return nil }
        self.init(
            userID: userID, provider: provider, subject: subject, challenge: PKCEChallenge(challenge: challenge, method: method),
            createdAt: Date(timeIntervalSince1970: Double(created) / 1000), sealedProviderToken: object["pt"]?.stringValue,
            sealedProviderRefreshToken: object["prt"]?.stringValue)
    }
}
