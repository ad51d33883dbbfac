/// Sign in with Apple. Issuers `https://appleid.apple.com` and `https://account.apple.com`;
/// audiences are bundle ids and service ids.
public typealias AppleVerifier = ProviderIDTokenVerifier<AppleClaims>

/// Apple's claims: emails (relay addresses included) count as verified, GoTrue's rule, whatever
/// `email_verified` says (a boolean, or the string "true"/"false" before 2022).
/// `is_private_email`, `auth_time` and `transfer_sub` go to `custom_claims`.
public enum AppleClaims: IdentityClaimsPolicy {
    public static func isEmailVerified(_ claims: [String: JSONValue]) -> Bool { true }
    public static let customClaimNames = ["is_private_email", "auth_time", "transfer_sub"]
}
