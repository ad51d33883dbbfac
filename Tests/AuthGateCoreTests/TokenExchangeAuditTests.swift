import AuthGateTestSupport
import Crypto
import Foundation
import Testing

@testable import AuthGateCore

/// The outside audit's findings against the token exchange and accounts, each reproduced on the
/// memory and Redis stores.
@Suite("Token exchange audit findings", .serialized, .timeLimit(.minutes(3)))
struct TokenExchangeAuditTests: AccountsTesting {
    // MARK: Finding 1: one spelling per token

    @Test("base64url decoding is strict: no padding, no +/, no set trailing bits; decode(encode(x)) == x")
    func strictBase64URL() {
        #expect(Base64URL.decode("YQ") == [0x61])
        #expect(Base64URL.decode("YQ==") == nil, "padding")
        #expect(Base64URL.decode("YR") == nil, "non-zero trailing bits")
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
        #expect(Base64URL.decode("+/8") == nil, "the standard alphabet")
        #expect(Base64URL.decode("Y") == nil)
        #expect(Base64URL.decodeLenient("+/8=") == [0xfb, 0xff], "key material only")
        var generator = SeededGenerator(seed: 64)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            #expect(Base64URL.decode(text) == bytes)
            #expect(!text.contains("="))
        }
    }

    @Test(
        "a provider ID token re-encoded (padding, +/ alphabet, trailing bits) is malformed, and the original stays single-use",
        arguments: TestStoreKind.allCases)
    func reencodedIDTokens(kind: TestStoreKind) async throws {
        try await withService(kind) { accounts, _ in
            // A token whose signature holds a - or _ (so the +/ spelling differs).
            var token = idToken(subject: "reencode")
            while !token.split(separator: ".")[2].contains(where: { $0 == "-" || $0 == "_" }) { token = idToken(subject: "reencode") }
            let parts = token.split(separator: ".").map(String.init)
            let signature = parts[2]
            var lastBits = Array(signature.utf8)
            // RSA-2048: 256 bytes in 342 characters, the last one carrying 4 unused bits.
            lastBits[lastBits.count - 1] = lastBits[lastBits.count - 1] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let variants = [
                "\(parts[0]).\(parts[1]).\(signature)==",
                "\(parts[0]).\(parts[1]).\(signature.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/"))",
                "\(parts[0]).\(parts[1]).\(String(decoding: lastBits, as: UTF8.self))",
                "\(parts[0])=.\(parts[1]).\(signature)"
            ]
            for variant in variants {
                let failure = await code {
                    _ = try await accounts.signInWithIDToken(provider: "fake", idToken: variant, rawNonce: nil, linkingTo: nil, now: Date())
                }
                #expect(failure == .malformed || failure == .badSignature, "\(variant.suffix(8)): \(String(describing: failure))")
            }
            _ = try await accounts.signInWithIDToken(provider: "fake", idToken: token, rawNonce: nil, linkingTo: nil, now: Date())
            let replay = await code {
                _ = try await accounts.signInWithIDToken(provider: "fake", idToken: token, rawNonce: nil, linkingTo: nil, now: Date())
            }
            #expect(replay == .replayed)
        }
    }

    @Test("the replay key covers the signed part: another signature for the same claims is the same token")
    func replayKeyIgnoresTheSignature() throws {
        let token = idToken(subject: "replay-key")
        let parts = token.split(separator: ".").map(String.init)
        let other = "\(parts[0]).\(parts[1]).\(Base64URL.encode([UInt8](repeating: 9, count: 256)))"
        func replayKey(_ text: String) throws -> String {
            IDTokenCheck.replayKey(signedDigest: SHA256.hash(data: try CompactJWT(parsing: text).signedBytes))
        }
        #expect(try replayKey(token) == replayKey(other))
    }

    @Test("AuthGate's own ES256 tokens are signed with a low s; a high-s or padded copy is refused")
    func lowSAccessTokens() throws {
        let key = try SigningKey.generate(kid: "k1", algorithm: .es256)
        let ring = try SigningKeyRing(validating: [key])
        let issuer = AccessTokenIssuer(keyRing: ring)
        let verifier = AccessTokenVerifier(keyRing: ring, issuer: "https://auth.example.com/auth/v1", audience: "authenticated")
        let now = Int64(Date().timeIntervalSince1970)
        for index in 0..<64 {
            let claims = AccessTokenClaims(
                iss: "https://auth.example.com/auth/v1", sub: "user-\(index)", aud: "authenticated", exp: now + 600, iat: now, email: "", phone: "",
                appMetadata: [:], userMetadata: [:], role: "authenticated", aal: "aal1", amr: [], sessionID: nil, isAnonymous: false
            )
            let token = try issuer.mint(claims)
            let parts = token.split(separator: ".").map(String.init)
            let signature = try #require(Base64URL.decode(parts[2]))
            #expect(ECDSALowS.isLow(signature, order: ECDSALowS.p256Order), "token \(index) has a high s")
            _ = try verifier.verify(token, now: Date())
            // The other valid signature of the same claims: (r, n - s).
            let order = ECDSALowS.p256Order
            let high = Array(signature[..<32]) + subtract(order, Array(signature[32...]))
            let highToken = "\(parts[0]).\(parts[1]).\(Base64URL.encode(high))"
            #expect(throws: AuthGateError.self) { try verifier.verify(highToken, now: Date()) }
            #expect(throws: AuthGateError.self) { try verifier.verify(token + "=", now: Date()) }
        }
    }

    /// `left - right`, big-endian, `left >= right`: written here again on purpose, so the test
    /// makes its high-s signature without the code under test.
    private func subtract(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: left.count)
        var borrow = 0
        for index in stride(from: left.count - 1, through: 0, by: -1) {
            var difference = Int(left[index]) - Int(right[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return result
    }

    // MARK: Finding 2: email comparison

    @Test(
        "a verified email spelled with Unicode look-alikes is never linked to another user's ASCII address",
        arguments: TestStoreKind.allCases
    )
    func unicodeEmails(kind: TestStoreKind) async throws {
        let pairs = [
            ("kelly-1@example.com", "\u{212A}elly-1@example.com"),  // KELVIN SIGN
            ("sam-1@example.com", "\u{017F}am-1@example.com"),  // LATIN SMALL LETTER LONG S
            ("kim-1@example.com", "k\u{0131}m-1@example.com"),  // LATIN SMALL LETTER DOTLESS I
            ("isa-1@example.com", "\u{0130}sa-1@example.com"),  // LATIN CAPITAL LETTER I WITH DOT ABOVE
            ("kelly-2@example.com", "\u{FF4B}elly-2@example.com")  // FULLWIDTH LATIN SMALL LETTER K
        ]
        try await withService(kind) { accounts, _ in
            for (index, (ascii, lookalike)) in pairs.enumerated() {
                let owner = try await accounts.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "owner-\(index)", email: ascii), rawNonce: nil, linkingTo: nil, now: Date()
                )
                let attacker = try await accounts.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "attacker-\(index)", email: lookalike), rawNonce: nil, linkingTo: nil, now: Date()
                )
                #expect(attacker.user.id != owner.user.id, "\(lookalike) was linked into \(ascii)'s account")
                // The same non-ASCII address twice is not linked either: such addresses never link.
                let again = try await accounts.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "again-\(index)", email: lookalike), rawNonce: nil, linkingTo: nil, now: Date()
                )
                #expect(again.user.id != attacker.user.id)
            }
        }
        #expect(EmailAddress.canonical("Ann@Example.COM") == "ann@example.com")
        #expect(EmailAddress.canonical("\u{212A}elly@Example.com") == "\u{212A}elly@example.com", "only ASCII letters change")
        #expect(!EmailAddress.allowsAutomaticLinking("\u{212A}elly@example.com"))
    }

    // MARK: Finding 5: numbers from outside

    @Test(
        "a provider-signed exp, nbf or iat at the extremes is refused, never a trap",
        arguments: [(String, JSONValue, AuthGateError.Code?)]([
            ("exp", JSONValue.integer(Int64.max), AuthGateError.Code.malformed), ("exp", .double(1e308), .expired), ("exp", .integer(-5), .expired),
            ("exp", .double(1_700_000_000.5), .expired), ("exp", .string("9999999999"), .expired), ("iat", .integer(Int64.max), .issuedInFuture),
            ("nbf", .integer(Int64.max), .notYetValid), ("iat", .double(-1e308), .malformed), ("nbf", .integer(Int64.min), nil)
        ])
    )
    func extremeTimes(claim: String, value: JSONValue, expected: AuthGateError.Code?) async throws {
        try await withService(.memory) { accounts, _ in
            var claims = FakeProvider.claims(
                issuer: "https://fake.example", audience: "app", subject: "extreme-\(claim)", extra: ["jti": .string(UUID().uuidString)])
            claims[claim] = value
            let token = FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
            let failure = await code {
                _ = try await accounts.signInWithIDToken(provider: "fake", idToken: token, rawNonce: nil, linkingTo: nil, now: Date())
            }
            #expect(failure == expected)
        }
    }

    @Test(
        "durations and sizes from outside are parsed with checked arithmetic and a range",
        arguments: [
            "9999999999999999h", "106751991167301d", "9223372036854775807ms", "99999999999999999999s", "1h9999999999999999h", "36501d"
        ])
    func hugeDurations(text: String) throws {
        #expect(ConfigurationValueParsers.duration(text) == nil)
        #expect(throws: ConfigurationError.self) {
            try AuthGateConfiguration.parse(yaml: "tokens: { access_token_ttl: \(text) }", baseDirectory: "", environment: [:])
        }
        #expect(throws: ConfigurationError.self) {
            try AuthGateConfiguration.parse(
                yaml: "routes: [ { name: r, path_prefix: /r/, upstreams: [http://a:1], max_body: 99999999999999999999GiB } ]", baseDirectory: "",
                environment: [:])
        }
        #expect(Date(timeIntervalSince1970: 9.2e18).unixMilliseconds == 253_402_300_799_000)
        #expect(Date(timeIntervalSince1970: -9.2e18).unixSeconds == -62_135_596_800)
    }

    // MARK: Finding 7: what a deletion or a refused link leaves behind

    @Test("a soft-deleted user's email is released: the same verified email signs in as a new, working user", arguments: TestStoreKind.allCases)
    func softDeleteReleasesEmail(kind: TestStoreKind) async throws {
        try await withService(kind) { accounts, store in
            let first = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "soft-1", email: "soft@example.com"), rawNonce: nil, linkingTo: nil, now: Date()
            )
            #expect(try await AdminService(store: store, logger: accountsTestLogger).deleteUser(first.user.id, soft: true, now: Date()))
            #expect(try await store.owner(ofEmail: "soft@example.com") == nil)
            let next = try await accounts.signInWithIDToken(
                provider: "fake", idToken: idToken(subject: "soft-2", email: "soft@example.com"), rawNonce: nil, linkingTo: nil, now: Date()
            )
            #expect(next.user.id != first.user.id)
            #expect(next.user.email == "soft@example.com")
            #expect(try await store.owner(ofIdentity: "fake", subject: "soft-2") == next.user.id)
        }
    }

    @Test("linking an identity whose email is not verified is refused and changes nothing", arguments: TestStoreKind.allCases)
    func refusedLinkChangesNothing(kind: TestStoreKind) async throws {
        try await withService(kind) { accounts, store in
            let anonymous = try await accounts.signUpAnonymously(data: [:], now: Date())
            let caller = try await accounts.authenticate(bearer: anonymous.accessToken, now: Date())
            let failure = await code {
                _ = try await accounts.signInWithIDToken(
                    provider: "fake", idToken: idToken(subject: "unverified-1", email: "u@example.com", verified: false), rawNonce: nil,
                    linkingTo: caller,
                    now: Date()
                )
            }
            #expect(failure == .emailNotConfirmed)
            #expect(try await store.owner(ofIdentity: "fake", subject: "unverified-1") == nil, "the identity stayed linked")
            #expect(try await store.identities(ofUser: caller.user.id).isEmpty)
            #expect(try await store.user(id: caller.user.id)?.isAnonymous == true)
        }
    }

    // MARK: Findings 8 and 9: what official clients depend on

    @Test("a refresh token that is not one of ours is refresh_token_not_found (clients then sign out)", arguments: TestStoreKind.allCases)
    func unknownRefreshToken(kind: TestStoreKind) async throws {
        try await withService(kind) { accounts, _ in
            for presented in ["abcdefghijkl", "x", String(repeating: "a", count: 87), String(repeating: "=", count: 200)] {
                let failure = await code { _ = try await accounts.refresh(presented, now: Date()) }
                #expect(failure == .refreshTokenNotFound, "\(presented.prefix(12))")
            }
        }
    }

    @Test("iat and nbf may be a little ahead (clock_skew, 60 s by default); exp has no leeway unless configured")
    func clockSkew() async throws {
        try await withService(.memory) { accounts, _ in
            let now = Date()
            for (offset, accepted) in [(30.0, true), (59.0, true), (120.0, false)] {
                var claims = FakeProvider.claims(
                    issuer: "https://fake.example", audience: "app", subject: "skew-\(offset)", now: now, extra: ["jti": .string(UUID().uuidString)])
                claims["iat"] = .integer(Int64(now.timeIntervalSince1970 + offset))
                claims["nbf"] = .integer(Int64(now.timeIntervalSince1970 + offset))
                let token = FakeProvider.token(claims: claims, key: FakeProvider.sharedKeys[0])
                let failure = await code {
                    _ = try await accounts.signInWithIDToken(provider: "fake", idToken: token, rawNonce: nil, linkingTo: nil, now: now)
                }
                #expect(accepted ? failure == nil : failure == .notYetValid, "\(offset) s ahead: \(String(describing: failure))")
            }
            var expired = FakeProvider.claims(
                issuer: "https://fake.example", audience: "app", subject: "skew-exp", now: now, extra: ["jti": .string(UUID().uuidString)])
            expired["exp"] = .integer(Int64(now.timeIntervalSince1970) - 1)
            let failure = await code {
                _ = try await accounts.signInWithIDToken(
                    provider: "fake", idToken: FakeProvider.token(claims: expired, key: FakeProvider.sharedKeys[0]), rawNonce: nil, linkingTo: nil,
                    now: now)
            }
            #expect(failure == .expired)
        }
    }
}
