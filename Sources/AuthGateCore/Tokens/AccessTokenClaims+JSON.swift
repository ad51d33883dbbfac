extension AccessTokenClaims {
    /// Reads the claims of a verified access token from its JSON object, with the rules of
    /// ``init(from:)`` (the same required and optional members, a wrong type refused) but without
    /// Codable: this runs on every authenticated request.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/malformed`` naming the member.
    init(json members: [String: JSONValue]) throws {
        func malformed(_ name: String) -> AuthGateError {
            AuthGateError(.malformed, "the claims are not an AuthGate access token (\(name))")
        }
        func string(_ name: String) throws -> String {
            guard let value = members[name]?.stringValue else { throw malformed(name) }
            return value
        }
        func optional<Value>(_ name: String, _ read: (JSONValue) -> Value?) throws -> Value? {
            guard let value = members[name], value != .null else { return nil }
            guard let read = read(value) else { throw malformed(name) }
            return read
        }
        func integer(_ name: String) throws -> Int64 {
            guard let value = members[name]?.integerValue else { throw malformed(name) }
            return value
        }
        let amr = try optional("amr") { value -> [AuthenticationMethod]? in
            guard let elements = value.arrayValue else { return nil }
            var methods: [AuthenticationMethod] = []
            for element in elements {
                guard let object = element.objectValue, let method = object["method"]?.stringValue,
                    let timestamp = object["timestamp"]?.integerValue
                else { return nil }
                methods.append(AuthenticationMethod(method: method, timestamp: timestamp))
            }
            return methods
        }
        self.init(
            iss: try string("iss"), sub: try string("sub"), aud: try string("aud"), exp: try integer("exp"), iat: try integer("iat"),
            email: try optional("email", \.stringValue) ?? "", phone: try optional("phone", \.stringValue) ?? "",
            appMetadata: try optional("app_metadata", \.objectValue) ?? [:], userMetadata: try optional("user_metadata", \.objectValue) ?? [:],
            role: try string("role"), aal: try optional("aal", \.stringValue) ?? "aal1", amr: amr ?? [],
            sessionID: try optional("session_id", \.stringValue),
            isAnonymous: try optional("is_anonymous") { value -> Bool? in
                if case .bool(let flag) = value { return flag }
                return nil
            } ?? false
        )
    }
}
