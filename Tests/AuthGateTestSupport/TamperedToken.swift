/// Compact JWS tokens changed so that their signature no longer verifies.
public enum TamperedToken {
    /// The token with the first character of its signature replaced by a different one.
    ///
    /// Appending fixed characters ("…AA") is not a tamper when the signature already ends in them:
    /// an ES256 signature's last base64url character is one of four values, so such a test passed
    /// its "tampered" token unchanged about once in 256 runs. Changing a character to one it is not
    /// always changes the signed bytes, and the first character carries six significant bits, so the
    /// result is still canonical base64url.
    public static func signatureChanged(_ token: String) -> String {
        guard let lastDot = token.lastIndex(of: "."), lastDot < token.index(before: token.endIndex) else {
            return token + "A"
        }
        let first = token.index(after: lastDot)
        let replacement: Character = token[first] == "A" ? "B" : "A"
        return String(token[..<first]) + String(replacement) + String(token[token.index(after: first)...])
    }

    /// The token with its last `K` spelled U+212A KELVIN SIGN, which Swift's string equality and
    /// hashing treat as the same character (canonical equivalence) though its bytes differ; nil
    /// when the token has no `K`.
    public static func unicodeLookAlike(_ token: String) -> String? {
        guard let kelvin = token.lastIndex(of: "K") else { return nil }
        return String(token[..<kelvin]) + "\u{212A}" + String(token[token.index(after: kelvin)...])
    }
}
