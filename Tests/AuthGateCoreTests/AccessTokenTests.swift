import Crypto
import Foundation
import Testing

@testable import AuthGateCore

@Suite("Access tokens: minting, verification, JWKS", .timeLimit(.minutes(3)))
struct AccessTokenTests {
    private static let issuer = "http://127.0.0.1:9999/auth/v1"

    private func claims(now: Date = Date(), ttl: Int64 = 3600) -> AccessTokenClaims {
        let issued = Int64(now.timeIntervalSince1970)
        return AccessTokenClaims(
            iss: Self.issuer, sub: "5b0c3a6e-2f7d-4c1e-9a51-0d6c1f0e7a11", aud: "authenticated", exp: issued + ttl, iat: issued,
            email: "jane@example.com", phone: "", appMetadata: ["provider": "google", "providers": .array(["google"])],
            userMetadata: ["name": "Jane"], role: "authenticated", aal: "aal1",
            amr: [.init(method: "oauth", timestamp: issued)], sessionID: "9e1f0000-0000-4000-8000-000000000001", isAnonymous: false
        )
    }

    private func ring(_ keys: [SigningKey]) throws -> SigningKeyRing { try SigningKeyRing(validating: keys) }

    private func rejection(_ body: () throws -> AccessTokenClaims) -> AuthGateError.Code? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? AuthGateError)?.code
        }
    }

    @Test("ES256 and RS256 tokens carry kid and GoTrue's claims, and verify", arguments: [TokensConfiguration.SigningAlgorithm.es256, .rs256])
    func roundTrip(algorithm: TokensConfiguration.SigningAlgorithm) throws {
        let keyRing = try ring([SigningKey.generate(kid: "k1", algorithm: algorithm)])
        // One set of claims: made twice, a second may pass between them (a flaky comparison).
        let minted = claims()
        let token = try AccessTokenIssuer(keyRing: keyRing).mint(minted)
        let header = try JSONDecoder().decode([String: String].self, from: Data(try #require(Base64URL.decode(token.split(separator: ".")[0]))))
        #expect(header == ["alg": algorithm.rawValue, "kid": "k1", "typ": "JWT"])
        let payload = try #require(Base64URL.decode(token.split(separator: ".")[1]))
        let object = try JSONDecoder().decode([String: JSONValue].self, from: Data(payload))
        #expect(object["aud"] == "authenticated")
        #expect(object["amr"] == .array([.object(["method": "oauth", "timestamp": .integer(minted.iat)])]))
        #expect(object["is_anonymous"] == false)
        #expect(object["nbf"] == nil && object["jti"] == nil)
        let verified = try AccessTokenVerifier(keyRing: keyRing, issuer: Self.issuer, audience: "authenticated").verify(token, now: Date())
        #expect(verified == claims(now: Date(timeIntervalSince1970: Double(verified.iat))))
    }

    @Test("the direct claims writer gives the bytes of the Codable form with sorted members, with or without a session, escapes and nested metadata")
    func claimsWriterAgrees() throws {
        func codableForm(_ claims: AccessTokenClaims) throws -> JSONValue {
            try JSONValue.parse(Array(try JSONEncoder().encode(claims)))
        }
        var claims = claims()
        #expect(claims.serialized() == (try codableForm(claims)).serialized())
        claims.sessionID = nil
        claims.email = "quote\" back\\ slash \u{1} é"
        claims.appMetadata = ["providers": .array(["apple", "google"]), "z": .null, "a": .double(1.5)]
        claims.userMetadata = ["nested": .object(["b": 1, "a": .array([true, false])]), "ü": "x"]
        claims.amr = []
        claims.isAnonymous = true
        #expect(claims.serialized() == (try codableForm(claims)).serialized())
        #expect(try JSONValue.parse(claims.serialized()) == (try codableForm(claims)))
    }

    @Test("the direct claims reader agrees with the Codable one: same claims, same refusals")
    func claimsReaderAgrees() throws {
        let base = #""iss":"i","sub":"s","aud":"a","exp":2,"iat":1,"role":"authenticated""#
        let payloads = [
            "{\(base)}",
            #"{"# + base + #","email":"e@x","phone":null,"app_metadata":{"provider":"apple"},"user_metadata":{"n":[1,2.5,"x"]},"#
                + #""aal":"aal1","amr":[{"method":"oauth","timestamp":7}],"session_id":"x","is_anonymous":true}"#,
            "{\(base),\"session_id\":null,\"amr\":null}",
            #"{"iss":"i","sub":"s","aud":"a","exp":"2","iat":1,"role":"r"}"#,
            #"{"iss":"i","sub":"s","aud":["a"],"exp":2,"iat":1,"role":"r"}"#,
            #"{"iss":"i","sub":"s","aud":"a","exp":2,"iat":1}"#,
            "{\(base),\"is_anonymous\":\"true\"}",
            "{\(base),\"amr\":[{\"method\":\"oauth\"}]}",
            "{\(base),\"user_metadata\":[]}"
        ]
        for payload in payloads {
            let codable = try? JSONDecoder().decode(AccessTokenClaims.self, from: Data(payload.utf8))
            let members = try #require(try JSONValue.parse(Array(payload.utf8)).objectValue)
            let direct = try? AccessTokenClaims(json: members)
            #expect(codable == direct, "\(payload)")
        }
    }

    @Test("tampered, expired, foreign-issuer, wrong-audience and unknown-kid tokens are refused")
    func refusals() throws {
        let signingKey = try SigningKey.generate(kid: "k1", algorithm: .es256)
        let keyRing = try ring([signingKey])
        let issuer = AccessTokenIssuer(keyRing: keyRing)
        let verifier = AccessTokenVerifier(keyRing: keyRing, issuer: Self.issuer, audience: "authenticated")
        let token = try issuer.mint(claims())
        var parts = token.split(separator: ".").map(String.init)
        var tamperedClaims = claims()
        tamperedClaims.role = "service_role"
        parts[1] = Base64URL.encode(Array(try JSONEncoder().encode(tamperedClaims)))
        #expect(rejection { try verifier.verify(parts.joined(separator: "."), now: Date()) } == .badSignature)
        #expect(rejection { try verifier.verify(token, now: Date().addingTimeInterval(3601)) } == .expired)
        var foreign = claims()
        foreign.iss = "https://evil.example/auth/v1"
        #expect(rejection { try verifier.verify(issuer.mint(foreign), now: Date()) } == .issuer)
        var audience = claims()
        audience.aud = "other"
        #expect(rejection { try verifier.verify(issuer.mint(audience), now: Date()) } == .audience)
        let stranger = try AccessTokenIssuer(keyRing: ring([SigningKey.generate(kid: "k9", algorithm: .es256)])).mint(claims())
        #expect(rejection { try verifier.verify(stranger, now: Date()) } == .unknownKeyID)
        let sameKidOtherKey = try AccessTokenIssuer(keyRing: ring([SigningKey.generate(kid: "k1", algorithm: .es256)])).mint(claims())
        #expect(rejection { try verifier.verify(sameKidOtherKey, now: Date()) } == .badSignature)
        // Algorithm confusion: another alg on the ES256 key's kid is refused before any signature
        // work, whatever the signature. RS256 and PS256 keep the ES256 signature; HS256 is signed,
        // as the classic attack does, with HMAC keyed by the public key (its JWK and its raw point);
        // `none` has an empty signature.
        let publicJWK = JSONValue.object(signingKey.publicJWK).serialized()
        let point =
            Base64URL.decode(signingKey.publicJWK["x"]?.stringValue ?? "").map {
                [4] + $0 + (Base64URL.decode(signingKey.publicJWK["y"]?.stringValue ?? "") ?? [])
            } ?? []
        for alg in ["RS256", "PS256", "ES384", "HS256", "none"] {
            let header = Base64URL.encode(Array("{\"alg\":\"\(alg)\",\"kid\":\"k1\",\"typ\":\"JWT\"}".utf8))
            let signingInput = Array((header + "." + parts[1]).utf8)
            var signatures = [String(parts[2])]
            if alg == "HS256" {
                signatures = [publicJWK, point].map { secret in
                    Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: signingInput, using: SymmetricKey(data: secret))))
                }
            } else if alg == "none" {
                signatures = [""]
            }
            for signature in signatures {
                let confused = header + "." + parts[1] + "." + signature
                let code = rejection { try verifier.verify(confused, now: Date()) }
                #expect(code == .algorithmNotAllowed || (alg == "none" && code == .malformed), "alg \(alg) gave \(String(describing: code))")
            }
        }
    }

    @Test("rotation: retired and published keys verify, only the active one signs; a removed key's tokens fail")
    func rotation() throws {
        let old = try SigningKey.generate(kid: "old", algorithm: .es256)
        let new = try SigningKey.generate(kid: "new", algorithm: .es256, state: .published)
        let before = try ring([old, new])
        let oldToken = try AccessTokenIssuer(keyRing: before).mint(claims())
        #expect(oldToken.contains(Base64URL.encode(Array("{\"alg\":\"ES256\",\"kid\":\"old\",\"typ\":\"JWT\"}".utf8))))
        let after = try ring([
            SigningKey(kid: "old", state: .retired, privateKey: old.privateKey), SigningKey(kid: "new", state: .active, privateKey: new.privateKey)
        ])
        let verifier = AccessTokenVerifier(keyRing: after, issuer: Self.issuer, audience: "authenticated")
        _ = try verifier.verify(oldToken, now: Date())
        _ = try verifier.verify(AccessTokenIssuer(keyRing: after).mint(claims()), now: Date())
        let removed = AccessTokenVerifier(
            keyRing: try ring([SigningKey(kid: "new", state: .active, privateKey: new.privateKey)]), issuer: Self.issuer, audience: "authenticated")
        #expect(rejection { try removed.verify(oldToken, now: Date()) } == .unknownKeyID)
    }

    @Test("the published JWK verifies the token through an independent parser")
    func jwksVerifiesTokens() async throws {
        for algorithm in [TokensConfiguration.SigningAlgorithm.es256, .rs256] {
            let key = try SigningKey.generate(kid: "k-\(algorithm.rawValue)", algorithm: algorithm)
            let jwk = key.publicJWK
            #expect(jwk["use"] == "sig")
            #expect(jwk["key_ops"] == .array(["verify"]))
            #expect(jwk["d"] == nil && jwk["p"] == nil, "never publish private material")
            let document = try JSONEncoder().encode(["keys": [JSONValue.object(jwk)]])
            let parsed = try JWKSetParser.parse(Array(document), algorithm: algorithm == .es256 ? .es256 : .rs256)
            let publicKey = try #require(parsed.keys[key.kid])
            let token = try AccessTokenIssuer(keyRing: ring([key])).mint(claims())
            let jwt = try CompactJWT(parsing: token)
            #expect(publicKey.isValidSignature(jwt.signature, for: jwt.signedBytes, sha256: SHA256.hash(data: jwt.signedBytes)))
        }
    }

    @Test("PEM keys load from files: SEC1 and PKCS#8 EC, PKCS#8 RSA; junk is refused by kid")
    func pemLoading() throws {
        let ec = try SigningKey.generate(kid: "e", algorithm: .es256)
        let parsed = try SigningKey.parse(pem: ec.pemRepresentation, kid: "e", algorithm: .es256, state: .active)
        #expect(parsed.publicJWK == ec.publicJWK)
        #expect(throws: AuthGateError.self) { try SigningKey.parse(pem: ec.pemRepresentation, kid: "e", algorithm: .rs256, state: .active) }
        #expect(throws: AuthGateError.self) {
            try SigningKey.parse(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", kid: "x", algorithm: .es256, state: .active)
        }
    }
}
