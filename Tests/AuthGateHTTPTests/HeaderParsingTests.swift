import HTTPTypes
import Testing

@testable import AuthGateHTTP

@Suite(.timeLimit(.minutes(3))) struct HeaderParsingTests {
    @Test(arguments: [
        ("Bearer abc.def.ghi", "abc.def.ghi"),
        ("bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("Bearer   abc \t", "abc"),
        ("Bearer \tabc", "abc")
    ])
    func bearerTokenIsRead(header: String, token: String) {
        #expect(RequestSupport.bearerToken(authorization: header) == token)
    }

    @Test(arguments: ["Bearer", "Bearer ", "Bearer    ", "Basic abc", "Bearerx abc", "Bearer\tabc", "Bear abc", "Bearér abc", ""])
    func otherAuthorizationValuesHaveNoBearerToken(header: String) {
        #expect(RequestSupport.bearerToken(authorization: header) == nil)
    }

    @Test func trimmingOWSRemovesSpacesAndTabsOnly() {
        #expect(" \t a b \t ".trimmingOWS == "a b")
        #expect("\t\t".trimmingOWS == "")
        #expect("".trimmingOWS == "")
        #expect(" é ".trimmingOWS == "é")
        #expect("x\n".trimmingOWS == "x\n")
        let list = "gzip, , br"
        #expect(list.split(separator: ",").map(\.trimmingOWS) == ["gzip", "", "br"])
    }

    @Test("every header name the gateway declares as a constant is the field its literal names")
    func headerNameConstants() {
        #expect(RequestLogMiddleware.requestIDHeader.canonicalName == "x-request-id")
        #expect(ClientAddress.forwardedFor.canonicalName == "x-forwarded-for")
        #expect(GoTrueError.apiVersionHeader.canonicalName == "x-supabase-api-version")
        #expect(GoTrueError.errorCodeHeader.canonicalName == "x-sb-error-code")
        #expect(AdminController.totalCountHeader.rawName == "X-Total-Count")
        #expect(AdminController.linkHeader.canonicalName == "link")
    }
}
