import Testing

@testable import AuthGateCore

@Suite("at_hash against the access token sent with an ID token", .timeLimit(.minutes(3)))
struct AccessTokenHashRuleTests {
    /// OpenID Connect Core 1.0, appendix A.4 (RS256): this access token and this `at_hash`.
    private let specAccessToken = "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"
    private let specAtHash = "77QmUPtjPfzWtF2AnpK9RQ"

    private func failure(_ accessToken: String?, _ claim: JSONValue?, _ algorithm: ProvidersConfiguration.VerificationAlgorithm = .rs256)
        -> AuthGateError.Code?
    {
        do {
            try AccessTokenHashRule.check(accessToken: accessToken, claim: claim, algorithm: algorithm)
            return nil
        } catch {
            return (error as? AuthGateError)?.code
        }
    }

    @Test("the left half of the algorithm's hash, base64url: the specification's example, and SHA-384/512 computed by Python's hashlib")
    func knownAnswers() {
        #expect(AccessTokenHashRule.hash(specAccessToken, algorithm: .rs256) == specAtHash)
        #expect(AccessTokenHashRule.hash(specAccessToken, algorithm: .es256) == specAtHash)
        let token = "ya29.a0AfB_byC-example"
        #expect(AccessTokenHashRule.hash(token, algorithm: .rs256) == "dH-EsaJMbn_kxapXU3JFdw")
        #expect(AccessTokenHashRule.hash(token, algorithm: .rs384) == "1BX9a8Fim1XVxYPkyksUJzDwHY6CSNJ9")
        #expect(AccessTokenHashRule.hash(token, algorithm: .es384) == "1BX9a8Fim1XVxYPkyksUJzDwHY6CSNJ9")
        #expect(AccessTokenHashRule.hash(token, algorithm: .rs512) == "dyqafFcOl9J0bI8DsdLIrRBqYYtcXsUA1lnyQwB1lwM")
    }

    @Test("both present: accepted when they belong together, else access_token_mismatch (another token, another algorithm's hash)")
    func bothPresent() {
        #expect(failure(specAccessToken, .string(specAtHash)) == nil)
        #expect(failure(specAccessToken + "x", .string(specAtHash)) == .accessTokenMismatch)
        #expect(failure(specAccessToken, .string(specAtHash), .rs384) == .accessTokenMismatch)
        #expect(failure(specAccessToken, .string(specAtHash + "=")) == .accessTokenMismatch, "padded: not the one spelling")
    }

    /// 16 bytes in 22 base64url characters leave 4 bits of the last one unused: `R` and `S`..`f`
    /// decode to the same bytes in a lenient decoder. Only the canonical spelling matches.
    @Test("a spelling of the same bytes with other unused bits is a mismatch")
    func canonicalSpellingOnly() {
        let lenient = String(specAtHash.dropLast()) + "S"
        #expect(failure(specAccessToken, .string(lenient)) == .accessTokenMismatch)
    }

    @Test("only one present, or an empty one: nothing to compare (GoTrue's scope)")
    func onlyOnePresent() {
        #expect(failure(nil, .string(specAtHash)) == nil)
        #expect(failure("", .string(specAtHash)) == nil)
        #expect(failure(specAccessToken, nil) == nil)
        #expect(failure(specAccessToken, .null) == nil)
        #expect(failure(specAccessToken, .string("")) == nil)
    }

    @Test("an at_hash that is not a string makes the token malformed, with or without an access token")
    func notAString() {
        for claim: JSONValue in [.integer(1), .bool(true), .array([.string(specAtHash)]), .object(["h": .string(specAtHash)])] {
            #expect(failure(specAccessToken, claim) == .malformed, "\(claim)")
            #expect(failure(nil, claim) == .malformed, "\(claim)")
        }
    }
}
