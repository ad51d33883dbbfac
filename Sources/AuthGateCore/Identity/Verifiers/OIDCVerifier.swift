/// Any OpenID Connect issuer (Keycloak, Auth0, Firebase, Entra ID, …): `iss` must equal the
/// configured issuer exactly; keys come from `jwks_url`, `jwks_file`, or discovery
/// (`<issuer>/.well-known/openid-configuration` → `jwks_uri`).
public typealias OIDCVerifier = ProviderIDTokenVerifier<OIDCClaims>

/// Standard OIDC claims: the email is verified when `email_verified` says so.
public enum OIDCClaims: IdentityClaimsPolicy {
    public static func isEmailVerified(_ claims: [String: JSONValue]) -> Bool {
        claims["email_verified"]?.lenientBoolValue == true
    }
    public static let customClaimNames: [String] = []
}
