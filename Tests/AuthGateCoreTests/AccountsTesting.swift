import AuthGateTestSupport
import Foundation
import Logging
import RedisBridge

@testable import AuthGateCore

let accountsTestLogger = Logger(label: "accounts-test")

/// What suites testing ``AccountService`` share: a service over each store, provider tokens, and
/// the code of a thrown ``AuthGateError``.
protocol AccountsTesting {}

extension AccountsTesting {
    /// A service over a fresh store and a file-backed fake provider named `fake` (issuer
    /// `https://fake.example`), with anonymous sign-in on.
    func withService(
        _ kind: TestStoreKind, reuse: String = "10s", extra: String = "", keys: SigningKeys? = nil,
        _ body: (AccountService, any AuthStore) async throws -> Void
    ) async throws {
        let jwks = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        try FakeProvider.jwks(FakeProvider.sharedKeys).write(to: jwks, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: jwks) }
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                tokens: { refresh: { reuse_interval: \(reuse) \(extra) } }
                providers:
                  anonymous: { enabled: true }
                  oidc: [ { name: fake, issuer: "https://fake.example", audiences: [app], jwks_file: "\(jwks.path)" } ]
                """,
            baseDirectory: "",
            environment: [:]
        )
        let signingKeys = try keys ?? SigningKeys(SigningKeyRing.load(configuration.tokens, allowGenerated: true))
        let registry = IdentityVerifierRegistry(providers: configuration.providers, fetcher: UnusedFetcher(), logger: accountsTestLogger)
        func make(_ store: any AuthStore) -> AccountService {
            AccountService(
                store: store, tokens: configuration.tokens, keys: signingKeys,
                idTokens: IDTokenSignInVerifier(
                    registry: registry, replayGuard: ReplayGuard(store: store, configuration: configuration.replay),
                    nonces: ServerNonceIssuer(store: store, lifetime: .seconds(60))
                ),
                logger: accountsTestLogger
            )
        }
        try await withTestStore(kind) { store in try await body(make(store), store) }
    }

    func idToken(subject: String, email: String? = nil, verified: Bool = true, now: Date = Date()) -> String {
        var extra: [String: JSONValue] = ["email_verified": .bool(verified), "jti": .string(UUID().uuidString)]
        extra["email"] = email.map(JSONValue.string) ?? .null
        var claims = FakeProvider.claims(issuer: "https://fake.example", audience: "app", subject: subject, now: now, extra: extra)
        if email == nil { claims.removeValue(forKey: "email") }
        return FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
    }

    func code(_ body: () async throws -> Void) async -> AuthGateError.Code? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? AuthGateError)?.code
        }
    }
}
