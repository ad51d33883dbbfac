/// The claims of an AuthGate access token, GoTrue's set in GoTrue's order
/// (`internal/tokens/service.go`): `aud` is a single string, `amr` a list of objects,
/// `session_id` stable across refreshes, `is_anonymous` always present.
public struct AccessTokenClaims: Sendable, Codable, Hashable {
    /// One authentication method of the session.
    public struct AuthenticationMethod: Sendable, Codable, Hashable {
        public var method: String
        public var timestamp: Int64

        public init(method: String, timestamp: Int64) {
            self.method = method
            self.timestamp = timestamp
        }

        /// `{"method": …, "timestamp": …}`, as claims, stored sessions and the admin API write it.
        public var jsonValue: JSONValue { .object(["method": .string(method), "timestamp": .integer(timestamp)]) }
    }

    public var iss: String
    public var sub: String
    public var aud: String
    public var exp: Int64
    public var iat: Int64
    public var email: String
    public var phone: String
    public var appMetadata: [String: JSONValue]
    public var userMetadata: [String: JSONValue]
    public var role: String
    public var aal: String
    public var amr: [AuthenticationMethod]
    public var sessionID: String?
    public var isAnonymous: Bool

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, email, phone
        case appMetadata = "app_metadata"
        case userMetadata = "user_metadata"
        case role, aal, amr
        case sessionID = "session_id"
        case isAnonymous = "is_anonymous"
    }

    public init(
        iss: String, sub: String, aud: String, exp: Int64, iat: Int64, email: String, phone: String,
        appMetadata: [String: JSONValue], userMetadata: [String: JSONValue], role: String, aal: String,
        amr: [AuthenticationMethod], sessionID: String?, isAnonymous: Bool
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.exp = exp
        self.iat = iat
        self.email = email
        self.phone = phone
        self.appMetadata = appMetadata
        self.userMetadata = userMetadata
        self.role = role
        self.aal = aal
        self.amr = amr
        self.sessionID = sessionID
        self.isAnonymous = isAnonymous
    }

    /// Decodes leniently enough for tokens minted by an older AuthGate or by an operator
    /// (`service_role` tokens have no session): only `iss`, `sub`, `aud`, `exp`, `iat` and `role` are required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decode(String.self, forKey: .sub)
        aud = try container.decode(String.self, forKey: .aud)
        exp = try container.decode(Int64.self, forKey: .exp)
        iat = try container.decode(Int64.self, forKey: .iat)
        role = try container.decode(String.self, forKey: .role)
        email = try container.decodeIfPresent(String.self, forKey: .email) ?? ""
        phone = try container.decodeIfPresent(String.self, forKey: .phone) ?? ""
        appMetadata = try container.decodeIfPresent([String: JSONValue].self, forKey: .appMetadata) ?? [:]
        userMetadata = try container.decodeIfPresent([String: JSONValue].self, forKey: .userMetadata) ?? [:]
        aal = try container.decodeIfPresent(String.self, forKey: .aal) ?? "aal1"
        amr = try container.decodeIfPresent([AuthenticationMethod].self, forKey: .amr) ?? []
        sessionID = try container.decodeIfPresent(String.self, forKey: .sessionID)
        isAnonymous = try container.decodeIfPresent(Bool.self, forKey: .isAnonymous) ?? false
    }

    /// The payload's JSON, written member by member in sorted name order: the bytes of the Codable
    /// form with its members sorted (a test holds them equal), without a dictionary built and
    /// sorted on every mint. `metadata`, when given, is the text of ``appMetadata`` and
    /// ``userMetadata`` already written (``ClaimsMetadataCache``).
    func serialized(metadata: ClaimsMetadataCache.Text? = nil) -> [UInt8] {
        var object = JSONObjectWriter(capacity: 512)
        object.string("aal", aal)
        object.objects("amr", amr) { method, object in
            object.string("method", method.method)
            object.integer("timestamp", method.timestamp)
        }
        if let metadata {
            object.text("app_metadata", metadata.appMetadata)
        } else {
            object.metadata("app_metadata", appMetadata)
        }
        object.string("aud", aud)
        object.string("email", email)
        object.integer("exp", exp)
        object.integer("iat", iat)
        object.bool("is_anonymous", isAnonymous)
        object.string("iss", iss)
        object.string("phone", phone)
        object.string("role", role)
        object.string("session_id", sessionID)
        object.string("sub", sub)
        if let metadata {
            object.text("user_metadata", metadata.userMetadata)
        } else {
            object.metadata("user_metadata", userMetadata)
        }
        return object.finished()
    }
}
