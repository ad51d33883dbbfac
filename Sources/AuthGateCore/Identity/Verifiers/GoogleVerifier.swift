/// Sign in with Google. Issuers `https://accounts.google.com` and `accounts.google.com`;
/// audiences are the web, iOS and Android client ids (`azp` is informational only).
public typealias GoogleVerifier = ProviderIDTokenVerifier<GoogleClaims>

/// Google's claims: the email is verified when `email_verified` (or the legacy `verified_email`)
/// is true; `hd` (the Workspace domain) goes to `custom_claims`.
public enum GoogleClaims: IdentityClaimsPolicy {
    public static func isEmailVerified(_ claims: [String: JSONValue]) -> Bool {
        claims["email_verified"]?.lenientBoolValue == true || claims["verified_email"]?.lenientBoolValue == true
    }
    public static let customClaimNames = ["hd"]
}
