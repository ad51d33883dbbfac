import Crypto

/// The ID token's `at_hash` against the provider access token sent with it (OpenID Connect Core
/// §3.1.3.8, §3.2.2.9), with GoTrue's scope (`internal/api/provider/oidc.go`): checked only when
/// the request carries a non-empty `access_token` and the token a non-empty `at_hash`. Google's
/// iOS and Android SDKs hand the app both tokens, and supabase-swift's `signInWithIdToken` sends
/// both; a pair that does not belong together is refused ("Bad ID token"), as GoTrue refuses it.
///
/// `at_hash` is the base64url (unpadded) of the left half of the hash of the access token's
/// ASCII bytes, with the hash of the ID token's algorithm: SHA-256 for `RS256`/`ES256`, SHA-384
/// for `RS384`/`ES384`, SHA-512 for `RS512`. The algorithm is the provider's configured one
/// (which the token's header had to name), never read from the token. The claim is compared in
/// its one canonical spelling, in constant time: a claim that decodes to the same bytes with
/// other padding bits is a mismatch.
public enum AccessTokenHashRule {
    /// Checks `claim` (the token's `at_hash`, if any) against `accessToken`.
    /// - Throws: ``AuthGateError`` ``AuthGateError/Code/malformed`` when `at_hash` is present but
    ///   neither a string nor `null` (go-oidc cannot read such a token at all), and
    ///   ``AuthGateError/Code/accessTokenMismatch`` when both are present and differ.
    public static func check(accessToken: String?, claim: JSONValue?, algorithm: ProvidersConfiguration.VerificationAlgorithm) throws {
        let expected: String
        switch claim {
        case nil, .null?: return
        case .string(let value)?: expected = value
        case _?: throw AuthGateError(.malformed, "at_hash is not a string")
        }
        guard let accessToken, !accessToken.isEmpty, !expected.isEmpty else { return }
        guard ConstantTime.equal(hash(accessToken, algorithm: algorithm).utf8, expected.utf8) else {
            throw AuthGateError(.accessTokenMismatch, "the access token's hash is not the ID token's at_hash")
        }
    }

    /// The `at_hash` an ID token signed with `algorithm` carries for `accessToken`.
    public static func hash(_ accessToken: String, algorithm: ProvidersConfiguration.VerificationAlgorithm) -> String {
        let bytes = Array(accessToken.utf8)
        switch algorithm {
        case .rs256, .es256: return leftHalf(SHA256.hash(data: bytes))
        case .rs384, .es384: return leftHalf(SHA384.hash(data: bytes))
        case .rs512: return leftHalf(SHA512.hash(data: bytes))
        }
    }

    private static func leftHalf(_ digest: some Digest) -> String {
        Base64URL.encode(Array(digest.prefix(Int(type(of: digest).byteCount) / 2)))
    }
}
