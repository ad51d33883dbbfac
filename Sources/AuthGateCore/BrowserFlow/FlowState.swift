#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// One browser flow between `/authorize` and `/callback`, stored under its `state` until it is
/// used once or its lifetime ends (GoTrue's `flow_state` row).
public struct FlowState: Sendable, Hashable {
    /// The provider the browser was sent to.
    public var provider: String
    /// Where the browser goes back to (the allowed `redirect_to`, or the site URL).
    public var redirectTo: String
    /// The raw nonce; the provider was given its SHA-256, which its ID token must carry.
    public var nonce: String
    /// The PKCE challenge; nil for the implicit flow.
    public var challenge: PKCEChallenge?
    /// When `/authorize` made it: the whole flow must end within the lifetime from here.
    public var createdAt: Date
    /// The user the identity is linked to (`GET /user/identities/authorize`); nil for a sign-in.
    public var linkingTarget: String?
    /// The base64url SHA-256 of the ``FlowCookie`` value the starting browser was given; nil when
    /// the flow is not bound to a cookie (PKCE, linking, or `implicit_flow_cookie: false`).
    public var browserBinding: String?

    public init(
        provider: String, redirectTo: String, nonce: String, challenge: PKCEChallenge?, createdAt: Date, linkingTarget: String? = nil,
        browserBinding: String? = nil
    ) {
        self.provider = provider
        self.redirectTo = redirectTo
        self.nonce = nonce
        self.challenge = challenge
        self.createdAt = createdAt
        self.linkingTarget = linkingTarget
        self.browserBinding = browserBinding
    }

    /// The store key of a flow's `state` (a canonical UUID).
    static func storeKey(state: String) -> String { "flow:state:" + state }

    /// The stored text.
    var encoded: String {
        var object: [String: JSONValue] = [
            "v": 1, "p": .string(provider), "r": .string(redirectTo), "n": .string(nonce),
            "t": .integer(createdAt.unixMilliseconds(rounded: .down))
        ]
        if let challenge {
            object["c"] = .string(challenge.challenge)
            object["m"] = .string(challenge.method.rawValue)
        }
        if let linkingTarget { object["l"] = .string(linkingTarget) }
        if let browserBinding { object["b"] = .string(browserBinding) }
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }

    /// A stored text read back; nil when it is not one this version writes.
    init?(encoded text: String) {
        guard let object = (try? JSONValue.parse(Array(text.utf8)))?.objectValue, object["v"]?.integerValue == 1,
            let provider = object["p"]?.stringValue, let redirectTo = object["r"]?.stringValue, let nonce = object["n"]?.stringValue,
            let created = object["t"]?.integerValue
        else { return nil }
        var challenge: PKCEChallenge?
        if let text = object["c"]?.stringValue {
            guard let method = object["m"]?.stringValue.flatMap(PKCEChallenge.Method.init(rawValue:)) else { return nil }
            challenge = PKCEChallenge(challenge: text, method: method)
        }
        self.init(
            provider: provider, redirectTo: redirectTo, nonce: nonce, challenge: challenge,
            createdAt: Date(timeIntervalSince1970: Double(created) / 1000), linkingTarget: object["l"]?.stringValue,
            browserBinding: object["b"]?.stringValue)
    }
}
