#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Turns a native app's Apple authorization code into Apple's refresh token for one Apple
/// identity, sealed for storing on it: exchanged at Apple's `/auth/token`, the returned ID token
/// checked to be for the same Apple `sub`, then sealed (``ProviderTokenSealer``). The token is
/// never logged or stored in the clear.
public struct AppleRefreshTokens: Sendable {
    private let client: AppleTokenClient
    private let sealer: ProviderTokenSealer
    /// The client id a code is exchanged for when the caller names none: the Apple provider's
    /// first audience (the app's bundle id, as configured first).
    public let defaultClientID: String

    public init(client: AppleTokenClient, sealer: ProviderTokenSealer, defaultClientID: String) {
        self.client = client
        self.sealer = sealer
        self.defaultClientID = defaultClientID
    }

    /// Apple's refresh token for the identity `subject`, sealed.
    /// - Throws: ``AuthGateError``: `providerRejected` (a used or expired code, or a code of
    ///   another Apple account), `providerCredentialsRejected`, `providerUnavailable`,
    ///   `appleClientUnknown`.
    public func sealedRefreshToken(code: String, clientID: String, subject: String, now: Date) async throws -> String {
        let code = code.trimmed
        guard !code.isEmpty, code.utf8.count <= 1024, code.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw AuthGateError(.validationFailed, "authorization_code is not a printable code")
        }
        let grant: AppleTokenClient.Grant
        do {
            grant = try await client.exchange(code: code, clientID: clientID, now: now)
            GatewayMetrics.providerCodeExchange(provider: "apple", outcome: "ok")
        } catch let error as AuthGateError {
            GatewayMetrics.providerCodeExchange(provider: "apple", outcome: error.code.description)
            throw error
        }
        guard ByteExactString(grant.subject) == ByteExactString(subject) else {
            GatewayMetrics.providerCodeExchange(provider: "apple", outcome: "subject_mismatch")
            throw AuthGateError(.providerRejected, "the authorization code belongs to another Apple account than the identity")
        }
        return try sealer.seal(grant.refreshToken, provider: "apple", subject: subject)
    }
}
