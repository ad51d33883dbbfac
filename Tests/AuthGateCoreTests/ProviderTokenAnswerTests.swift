import Testing

@testable import AuthGateCore

/// A provider token endpoint's answer, read by the one set of rules the browser flow's code
/// exchange and Apple's `/auth/token` share.
@Suite("Provider token answers")
struct ProviderTokenAnswerTests {
    static func answer(_ body: String) -> ProviderFormPost.Answer {
        ProviderFormPost.Answer(status: 200, body: Array(body.utf8), errorCode: nil)
    }

    @Test("the three tokens are read when present; absent, null or empty ones are nil")
    func tokensRead() throws {
        let full = try Self.answer(#"{"id_token":"a.b.c","access_token":"ya29.x","refresh_token":"1//r","expires_in":3599}"#).tokens("t")
        #expect(full.idToken == "a.b.c" && full.accessToken == "ya29.x" && full.refreshToken == "1//r")
        let sparse = try Self.answer(#"{"id_token":"a.b.c","access_token":"","refresh_token":null}"#).tokens("t")
        #expect(sparse.idToken == "a.b.c" && sparse.accessToken == nil && sparse.refreshToken == nil)
        let none = try Self.answer("{}").tokens("t")
        #expect(none.idToken == nil && none.accessToken == nil && none.refreshToken == nil)
    }

    @Test(
        "anything else is the provider's refusal, and no token text is in the message",
        arguments: [
            "", "[]", "\"a.b.c\"", "{\"id_token\":", #"{"id_token":42}"#, #"{"refresh_token":["SECRET"]}"#,
            #"{"access_token":"SECRET with a space"}"#, #"{"id_token":"SECRET\u0000"}"#, #"{"refresh_token":"SECRÉT"}"#,
            #"{"id_token":"\#(String(repeating: "S", count: 16 * 1024 + 1))"}"#
        ])
    func refused(body: String) {
        #expect {
            _ = try Self.answer(body).tokens("apple token")
        } throws: { error in
            guard let error = error as? AuthGateError else { return false }
            return error.code == .providerRejected && error.message.hasPrefix("apple token: ") && !error.message.contains("SECRET")
                && !error.message.contains("SSSS")
        }
    }

    @Test("a token of exactly the longest size is taken")
    func longestToken() throws {
        let token = String(repeating: "t", count: ProviderFormPost.Answer.maximumTokenBytes)
        #expect(try Self.answer(#"{"id_token":"\#(token)"}"#).tokens("t").idToken == token)
    }
}
