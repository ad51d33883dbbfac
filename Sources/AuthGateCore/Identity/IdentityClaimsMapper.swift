/// Builds ``VerifiedIdentity`` from verified claims the way GoTrue fills `identity_data`
/// (`internal/api/provider/oidc.go`): iss, sub, provider_id, email, email_verified,
/// phone_verified, profile claims when present, and the provider's `custom_claims`.
enum IdentityClaimsMapper {
    static func identity(
        provider: String,
        verified: IDTokenCheck.Verified,
        emailVerified: Bool,
        customClaimNames: [String]
    ) -> VerifiedIdentity {
        let claims = verified.claims
        let email = claims["email"]?.stringValue.map(EmailAddress.canonical).flatMap { $0.isEmpty ? nil : $0 }
        var data: [String: JSONValue] = [
            "iss": .string(verified.issuer),
            "sub": .string(verified.subject),
            "provider_id": .string(verified.subject),
            "email_verified": .bool(email != nil && emailVerified),
            "phone_verified": .bool(false)
        ]
        if let email { data["email"] = .string(email) }
        let name = claims["name"]?.stringValue
        if let name {
            data["name"] = .string(name)
            data["full_name"] = .string(name)
        }
        let picture = claims["picture"]?.stringValue
        if let picture {
            data["picture"] = .string(picture)
            data["avatar_url"] = .string(picture)
        }
        if let username = claims["preferred_username"]?.stringValue { data["preferred_username"] = .string(username) }
        var custom: [String: JSONValue] = [:]
        for claimName in customClaimNames {
            guard let value = claims[claimName] else { continue }
            custom[claimName] = value.lenientBoolValue.map(JSONValue.bool) ?? value
        }
        if !custom.isEmpty { data["custom_claims"] = .object(custom) }
        return VerifiedIdentity(
            provider: provider,
            subject: verified.subject,
            email: email,
            emailVerified: email != nil && emailVerified,
            name: name,
            picture: picture,
            issuer: verified.issuer,
            expiresAt: verified.expiresAt,
            issuedAt: verified.issuedAt,
            claims: claims,
            identityData: data,
            tokenHash: verified.tokenHash
        )
    }
}
