import Crypto

/// A browser flow's PKCE challenge (RFC 7636) as `/authorize` received it, checked as GoTrue
/// checks it (`internal/api/pkce.go`), and the check of the verifier at the code exchange.
public struct PKCEChallenge: Sendable, Hashable {
    /// `code_challenge_method`, read case-insensitively and kept in lower case.
    public enum Method: String, Sendable, Hashable {
        case s256, plain
    }

    public let challenge: String
    public let method: Method

    public init(challenge: String, method: Method) {
        self.challenge = challenge
        self.method = method
    }

    /// The challenge of an `/authorize` request: nil when it has neither parameter (the implicit
    /// flow). GoTrue's checks in its order, with its texts.
    /// - Throws: ``AuthGateError`` `validation_failed`.
    public static func parse(challenge: String?, method: String?) throws -> PKCEChallenge? {
        let challenge = challenge ?? ""
        let method = method ?? ""
        if challenge.isEmpty, method.isEmpty { return nil }
        guard !challenge.isEmpty, !method.isEmpty else {
            throw AuthGateError(
                .validationFailed, "only one of code_challenge and code_challenge_method",
                clientText: .fixed("PKCE flow requires code_challenge_method and code_challenge"))
        }
        guard (43...128).contains(challenge.utf8.count) else {
            throw AuthGateError(
                .validationFailed, "code_challenge length", clientText: .fixed("code challenge has to be between 43 and 128 characters"))
        }
        guard challenge.utf8.allSatisfy(isUnreserved) else {
            throw AuthGateError(
                .validationFailed, "code_challenge characters",
                clientText: .fixed(
                    "code challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes"))
        }
        guard let parsed = Method(rawValue: method.lowercased()) else {
            throw AuthGateError(.validationFailed, "code_challenge_method", clientText: .fixed("Invalid code_challenge_method"))
        }
        return PKCEChallenge(challenge: challenge, method: parsed)
    }

    /// Whether `verifier` answers the challenge: `s256`, base64url (no padding) of its SHA-256;
    /// `plain`, itself. Compared in constant time. A verifier outside RFC 7636's form (43-128 of
    /// `A-Z a-z 0-9 - . _ ~`) answers nothing.
    public func isAnswered(by verifier: String) -> Bool {
        guard (43...128).contains(verifier.utf8.count), verifier.utf8.allSatisfy(Self.isUnreserved) else { return false }
        let expected: [UInt8]
        switch method {
        case .s256:
            var hasher = SHA256()
            hasher.update(utf8: verifier)
            expected = Array(Base64URL.encode(Array(hasher.finalize())).utf8)
        case .plain:
            expected = Array(verifier.utf8)
        }
        return ConstantTime.equal(expected, challenge.utf8)
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }
}
