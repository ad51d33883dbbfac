#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A JWS in compact form, split, with its header decoded and nothing verified yet.
///
/// AuthGate reads the header itself so that the algorithm and `kid` are checked against its
/// configuration before any key is touched. The payload is decoded only by ``verifiedClaims()``,
/// after the signature has been checked: untrusted claims are never parsed.
struct CompactJWT: Sendable {
    /// The header's `alg`.
    let algorithm: String
    /// The header's `kid`, if any.
    let keyID: String?
    /// The bytes the signature covers: ASCII `header.payload`.
    let signedBytes: [UInt8]
    /// The decoded signature.
    let signature: [UInt8]
    private let payloadSegment: Substring

    /// Longest token accepted: real ID tokens are 1-2 KB.
    static let maximumLength = 16 * 1024

    /// Splits and decodes `token`.
    /// - Throws: ``AuthGateError`` with code ``AuthGateError/Code/malformed``.
    init(parsing token: String) throws {
        guard token.utf8.count <= Self.maximumLength else { throw AuthGateError(.malformed, "the token is longer than \(Self.maximumLength) bytes") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[2].isEmpty else { throw AuthGateError(.malformed, "a compact JWS has three non-empty parts") }
        guard let headerBytes = Self.base64URLDecode(parts[0]), let signature = Self.base64URLDecode(parts[2]) else {
            throw AuthGateError(.malformed, "the header or signature is not base64url")
        }
        guard let header = (try? JSONValue.parse(headerBytes))?.objectValue else {
            throw AuthGateError(.malformed, "the header is not a JSON object")
        }
        guard let algorithm = header["alg"]?.stringValue else { throw AuthGateError(.malformed, "the header has no alg") }
        if header["crit"] != nil { throw AuthGateError(.malformed, "the header has critical extensions (crit), which are not supported") }
        self.algorithm = algorithm
        if let kid = header["kid"] {
            guard let text = kid.stringValue else { throw AuthGateError(.malformed, "the header's kid is not a string") }
            self.keyID = text
        } else {
            self.keyID = nil
        }
        self.signature = signature
        self.signedBytes = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        self.payloadSegment = parts[1]
    }

    /// The payload's bytes. Call only after the signature has verified.
    func payloadBytes() throws -> [UInt8] {
        guard let bytes = Self.base64URLDecode(payloadSegment) else { throw AuthGateError(.malformed, "the payload is not base64url") }
        return bytes
    }

    /// The payload's claims. Call only after the signature has verified.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/malformed`` when the payload is not a JSON object.
    func verifiedClaims() throws -> [String: JSONValue] {
        guard let bytes = Self.base64URLDecode(payloadSegment), let claims = (try? JSONValue.parse(bytes))?.objectValue else {
            throw AuthGateError(.malformed, "the payload is not a base64url JSON object")
        }
        return claims
    }

    /// Decodes canonical base64url (``Base64URL/decode(_:)``); nil for any other spelling.
    static func base64URLDecode(_ text: some StringProtocol) -> [UInt8]? {
        Base64URL.decode(text)
    }
}
