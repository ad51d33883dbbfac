import Foundation
import Testing

@testable import AuthGateCore

/// PKCE challenges (GoTrue's checks, RFC 7636's example) and the strict form reader the
/// browser flow reads its queries and Apple's form post with.
@Suite("PKCE challenges and form fields")
struct PKCEAndFormTests {
    /// RFC 7636 Appendix B.
    static let rfcVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

    func code(_ challenge: String?, _ method: String?) -> String? {
        do {
            _ = try PKCEChallenge.parse(challenge: challenge, method: method)
            return nil
        } catch let error as AuthGateError {
            return error.clientText?.text
        } catch {
            return "other"
        }
    }

    @Test("GoTrue's checks in order, the method read case-insensitively")
    func challenges() throws {
        #expect(try PKCEChallenge.parse(challenge: nil, method: nil) == nil)
        #expect(try PKCEChallenge.parse(challenge: "", method: "") == nil)
        #expect(try PKCEChallenge.parse(challenge: Self.rfcChallenge, method: "S256")?.method == .s256)
        #expect(code(Self.rfcChallenge, nil) == "PKCE flow requires code_challenge_method and code_challenge")
        #expect(code(nil, "s256") == "PKCE flow requires code_challenge_method and code_challenge")
        #expect(code(String(repeating: "a", count: 42), "s256") == "code challenge has to be between 43 and 128 characters")
        #expect(code(String(repeating: "a", count: 129), "s256") == "code challenge has to be between 43 and 128 characters")
        #expect(code(String(repeating: "a", count: 42) + "+", "s256")?.hasPrefix("code challenge can only contain") == true)
        #expect(code(Self.rfcChallenge, "S512") == "Invalid code_challenge_method")
    }

    @Test("verifiers: RFC 7636's example, plain, and everything else refused")
    func verifiers() {
        let s256 = PKCEChallenge(challenge: Self.rfcChallenge, method: .s256)
        #expect(s256.isAnswered(by: Self.rfcVerifier))
        #expect(!s256.isAnswered(by: Self.rfcVerifier + "x"))
        #expect(!s256.isAnswered(by: Self.rfcChallenge), "the challenge itself is not the verifier")
        let plain = PKCEChallenge(challenge: Self.rfcVerifier, method: .plain)
        #expect(plain.isAnswered(by: Self.rfcVerifier))
        #expect(!plain.isAnswered(by: Self.rfcVerifier.uppercased()))
        // Outside RFC 7636's form: answers nothing even when the bytes would match.
        let short = PKCEChallenge(challenge: "abc", method: .plain)
        #expect(!short.isAnswered(by: "abc"))
        #expect(
            !PKCEChallenge(challenge: String(repeating: "a", count: 42) + "+", method: .plain).isAnswered(by: String(repeating: "a", count: 42) + "+")
        )
    }

    @Test("forms: decoded once, strictly; a repeated field is refused where it is read once")
    func forms() throws {
        let form = try FormFields(parsing: "a=1&b=x+y%2Bz&&c&d=%E2%9C%93&a=2")
        #expect(form.fields.count == 5)
        #expect(try form.single("b") == "x y+z")
        #expect(try form.single("c") == "")
        #expect(try form.nonEmpty("c") == nil)
        #expect(try form.single("d") == "\u{2713}")
        #expect(throws: FormFields.Failure.repeated("a")) { try form.single("a") }
        for broken in ["a=%", "a=%4", "a=%zz", "a=%00", "a=%0A", "a=%C2%85", "a=%FF", "a=%C3", "a b=1", "a=\u{00e9}", "a=\t"] {
            #expect(throws: FormFields.Failure.self, "\(broken)") { try FormFields(parsing: broken) }
        }
        #expect(throws: FormFields.Failure.tooLarge) { try FormFields(parsing: String(repeating: "a=1&", count: 65)) }
        #expect(
            FormFields.encoded([("redirect_uri", "https://a.b/c?d=e f"), ("scope", "email profile")])
                == "redirect_uri=https%3A%2F%2Fa.b%2Fc%3Fd%3De%20f&scope=email%20profile")
        #expect(try FormFields(parsing: FormFields.encoded([("x", "a+b &=%")])).single("x") == "a+b &=%")
    }

    @Test("flow records read back what they stored, the verified identity whole")
    func flowRecords() throws {
        let state = FlowState(
            provider: "google", redirectTo: "http://localhost:3000/cb?x=1", nonce: "n",
            challenge: PKCEChallenge(challenge: Self.rfcChallenge, method: .s256),
            createdAt: Date(timeIntervalSince1970: 1_790_000_000.123), linkingTarget: "u-1")
        #expect(FlowState(encoded: state.encoded) == state)
        let bound = FlowState(
            provider: "google", redirectTo: "https://app.example.com", nonce: "n", challenge: nil, createdAt: Date(timeIntervalSince1970: 1),
            browserBinding: "h")
        #expect(FlowState(encoded: bound.encoded) == bound && FlowState(encoded: bound.encoded)?.browserBinding == "h")
        var identity = VerifiedIdentity(
            provider: "apple", subject: "001.abc", email: "a@privaterelay.appleid.com", emailVerified: true, name: "Jane Appleseed", picture: nil,
            issuer: "https://appleid.apple.com", expiresAt: Date(timeIntervalSince1970: 1_790_000_600),
            issuedAt: Date(timeIntervalSince1970: 1_790_000_000),
            claims: ["sub": "001.abc", "n": 3, "nested": .object(["a": .array([.bool(true), .null])])], identityData: ["full_name": "Jane Appleseed"],
            tokenHash: "ab12")
        identity.sealedRefreshToken = "sealed"
        identity.refreshTokenClientID = "com.example.web"
        let code = FlowCode(
            identity: identity, linkingTarget: nil, challenge: PKCEChallenge(challenge: Self.rfcVerifier, method: .plain),
            createdAt: Date(timeIntervalSince1970: 1_790_000_000), sealedProviderToken: "pt", sealedProviderRefreshToken: nil)
        let read = try #require(FlowCode(encoded: code.encoded))
        #expect(read.identity == identity)
        #expect(read.challenge == code.challenge && read.createdAt == code.createdAt && read.linkingTarget == nil)
        #expect(read.sealedProviderToken == "pt" && read.sealedProviderRefreshToken == nil)
        #expect(FlowCode(encoded: "{\"v\":2}") == nil && FlowState(encoded: "[]") == nil)
    }

    @Test(
        "the flow cookie: __Host- with Path=/ over https (no sibling subdomain can plant it), the callback's path over http; its value found among others however the Cookie fields split them"
    )
    func flowCookie() {
        let https = "https://auth.example.com/auth/v1/callback"
        #expect(
            FlowCookie.setting(state: "s1", value: "v", callbackURL: https, lifetime: .seconds(300))
                == "__Host-authgate-flow-s1=v; Path=/; HttpOnly; Secure; SameSite=None; Max-Age=300")
        #expect(
            FlowCookie.setting(state: "s1", value: "v", callbackURL: "http://localhost:9999/gw/auth/v1/callback?x=1", lifetime: .seconds(60))
                == "authgate-flow-s1=v; Path=/gw/auth/v1/callback; HttpOnly; SameSite=Lax; Max-Age=60")
        #expect(
            FlowCookie.clearing(state: "s1", callbackURL: "https://a.example")
                == "__Host-authgate-flow-s1=; Path=/; HttpOnly; Secure; SameSite=None; Max-Age=0")
        #expect(FlowCookie.name(state: "s1", callbackURL: "http://localhost/cb") == "authgate-flow-s1")
        let name = FlowCookie.name(state: "s1", callbackURL: https)
        #expect(FlowCookie.values(named: name, in: ["a=1; __Host-authgate-flow-s1=abc;b=2"]) == [Array("abc".utf8)])
        #expect(FlowCookie.values(named: name, in: ["a=1", "\t__Host-authgate-flow-s1=abc "]) == [Array("abc".utf8)])
        #expect(FlowCookie.values(named: name, in: ["authgate-flow-s1=planted; __host-authgate-flow-s1=y; __Host-authgate-flow-s12=z"]).isEmpty)
        #expect(
            FlowCookie.values(named: name, in: ["__Host-authgate-flow-s1=one; __Host-authgate-flow-s1=two"]) == [Array("one".utf8), Array("two".utf8)]
        )
        #expect(FlowCookie.values(named: name, in: []).isEmpty)
        let plain = FlowCookie.name(state: "s1", callbackURL: "http://localhost/cb")
        #expect(FlowCookie.values(named: plain, in: ["authgate-flow-s12=x; xauthgate-flow-s1=y; authgate-flow-s1", "AUTHGATE-FLOW-S1=z"]).isEmpty)
        for pair in ["__Host-authgate-flow-s=1", " authgate-flow-t=2", "\t__Host-authgate-flow-", "authgate-flow-"] {
            #expect(FlowCookie.isFlowCookie(pair.utf8), "\(pair)")
        }
        for pair in ["a=1", "__host-authgate-flow-s=1", "x__Host-authgate-flow-s=1", "authgate-flow", "__Secure-authgate-flow-s=1", ""] {
            #expect(!FlowCookie.isFlowCookie(pair.utf8), "\(pair)")
        }
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]) && !ConstantTime.equal([1, 2, 3], [1, 2, 4]) && !ConstantTime.equal([1, 2], [1, 2, 3]))
    }
}
