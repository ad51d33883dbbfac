import Testing

@testable import AuthGateCore

@Suite("GoTrue's nonce rule", .timeLimit(.minutes(3)))
struct NonceRuleTests {
    private let raw = "e2a1c4f0-5b8e-4c7e-9a57-3c1d9b0f7a21"

    private func failure(_ rawNonce: String?, _ claim: String?) -> AuthGateError? {
        do {
            try NonceRule.check(rawNonce: rawNonce, claim: claim)
            return nil
        } catch {
            return error as? AuthGateError
        }
    }

    @Test("the hash is the lower-case hex SHA-256 of the raw nonce's UTF-8 bytes")
    func hash() {
        #expect(NonceRule.hashed("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("both present and matching: accepted")
    func bothMatch() {
        #expect(failure(raw, NonceRule.hashed(raw)) == nil)
    }

    @Test("neither present (nil or empty): accepted")
    func neither() {
        #expect(failure(nil, nil) == nil)
        #expect(failure("", "") == nil)
    }

    @Test("only the request has a nonce: GoTrue's both-or-neither text")
    func onlyRequest() {
        let error = failure(raw, nil)
        #expect(error?.code == .nonceMissing)
        #expect(error?.message == "Passed nonce and nonce in id_token should either both exist or not.")
    }

    @Test("only the token has a nonce: GoTrue's both-or-neither text")
    func onlyToken() {
        let error = failure(nil, NonceRule.hashed(raw))
        #expect(error?.code == .nonceMissing)
        #expect(error?.message == "Passed nonce and nonce in id_token should either both exist or not.")
    }

    @Test("both present, hash differs: Nonces mismatch (the raw value itself as the claim, upper-case hex, a different nonce)")
    func mismatch() {
        for claim in [raw, NonceRule.hashed(raw).uppercased(), NonceRule.hashed(raw + "x")] {
            let error = failure(raw, claim)
            #expect(error?.code == .nonceMismatch)
            #expect(error?.message == "Nonces mismatch")
        }
    }
}
