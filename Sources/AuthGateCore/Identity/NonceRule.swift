import Crypto

/// GoTrue's nonce rule, to the letter (`internal/api/token_oidc.go`):
/// - exactly one of the request nonce and the token's `nonce` claim present: rejected with
///   "Passed nonce and nonce in id_token should either both exist or not.";
/// - both present: the lower-case hex SHA-256 of the raw request nonce's UTF-8 bytes must equal
///   the claim exactly, else "Nonces mismatch";
/// - neither present: accepted.
public enum NonceRule {
    /// GoTrue's text when exactly one nonce is present.
    public static let presenceMessage = "Passed nonce and nonce in id_token should either both exist or not."
    /// GoTrue's text when the hash differs.
    public static let mismatchMessage = "Nonces mismatch"

    /// Checks the rule. Empty strings count as absent, as in GoTrue.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/nonceMissing`` or ``AuthGateError/Code/nonceMismatch``.
    public static func check(rawNonce: String?, claim: String?) throws {
        let hasRaw = !(rawNonce ?? "").isEmpty
        let hasClaim = !(claim ?? "").isEmpty
        guard hasRaw == hasClaim else { throw AuthGateError(.nonceMissing, presenceMessage) }
        guard let rawNonce, let claim, hasRaw else { return }
        guard ByteExactString(hashed(rawNonce)) == ByteExactString(claim) else { throw AuthGateError(.nonceMismatch, mismatchMessage) }
    }

    /// Lower-case hex SHA-256 of the UTF-8 bytes: what a client gives the provider (and the hash
    /// the store keeps of every refresh token).
    public static func hashed(_ rawNonce: String) -> String {
        var hasher = SHA256()
        hasher.update(utf8: rawNonce)
        return Base64URL.hex(hasher.finalize())
    }
}
