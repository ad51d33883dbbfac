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
    private let payloadSegment: ArraySlice<UInt8>

    /// Longest token accepted: real ID tokens are 1-2 KB.
    static let maximumLength = 16 * 1024

    /// Splits and decodes `token`.
    /// - Throws: ``AuthGateError`` with code ``AuthGateError/Code/malformed``.
    init(parsing token: String) throws {
        guard token.utf8.count <= Self.maximumLength else { throw AuthGateError(.malformed, "the token is longer than \(Self.maximumLength) bytes") }
        // Split at the byte level: this runs on every authenticated request.
        let bytes = Array(token.utf8)
        let dot = UInt8(ascii: ".")
        guard let first = bytes.firstIndex(of: dot), let second = bytes[(first + 1)...].firstIndex(of: dot),
            !bytes[(second + 1)...].contains(dot), second + 1 < bytes.count
        else { throw AuthGateError(.malformed, "a compact JWS has three non-empty parts") }
        guard let headerBytes = Base64URL.decode(bytes: bytes[..<first]), let signature = Base64URL.decode(bytes: bytes[(second + 1)...]) else {
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
        self.signedBytes = Array(bytes[..<second])
        self.payloadSegment = bytes[(first + 1)..<second]
    }

    /// The payload's bytes. Call only after the signature has verified.
    func payloadBytes() throws -> [UInt8] {
        guard let bytes = Base64URL.decode(bytes: payloadSegment) else { throw AuthGateError(.malformed, "the payload is not base64url") }
        return bytes
    }

    /// The payload's claims. Call only after the signature has verified.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/malformed`` when the payload is not a JSON object.
    func verifiedClaims() throws -> [String: JSONValue] {
        guard let bytes = Base64URL.decode(bytes: payloadSegment), let claims = (try? JSONValue.parse(bytes))?.objectValue else {
            throw AuthGateError(.malformed, "the payload is not a base64url JSON object")
        }
        return claims
    }
}
