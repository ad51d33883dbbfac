import HTTPTypes
import NIOHTTP1
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

    /// `hasBody` read the text: `Content-Length: 00` was a body to some decisions (no retry on
    /// another upstream, an upgrade refused) and a zero length to the parser and the others.
    @Test("Content-Length is read once as a number: 0 and 00 are no body to every decision; a sign, a space, or over 18 digits is a framing problem")
    func contentLengthOneNumber() {
        func facts(_ value: String) -> RequestHeadFacts { RequestHeadFacts(HTTPHeaders([("Host", "a"), ("Content-Length", value)])) }
        for value in ["0", "00", "000000000000000000"] {
            #expect(facts(value).contentLength == 0 && !facts(value).hasBody && facts(value).framingProblem(version: .http1_1) == nil, "\(value)")
        }
        #expect(facts("0017").contentLength == 17 && facts("0017").hasBody)
        #expect(facts("999999999999999999").contentLength == 999_999_999_999_999_999)
        for value in ["+5", "-0", " 5", "5 ", "", "0x10", "1_0", "5.0", "0000000000000000000", "٥"] {
            #expect(facts(value).framingProblem(version: .http1_1) == "content_length_not_a_number", "\(value)")
            #expect(facts(value).contentLength == nil, "\(value)")
        }
        #expect(
            RequestHeadFacts(HTTPHeaders([("Content-Length", "5"), ("Content-Length", "5")])).framingProblem(version: .http1_1)
                == "several_content_lengths")
    }

    /// Tokens were matched after Unicode's lower-casing, which maps the Kelvin sign (U+212A) to
    /// `k`: `websoc\u{212A}et` was a WebSocket upgrade to the gateway (which then sent the
    /// upstream its own `websocket`), and `chun\u{212A}ed` the chunked coding to the framing check.
    @Test("protocol tokens and hosts match ignoring ASCII case only: a Kelvin sign is not a k")
    func asciiCaseOnly() {
        let kelvin = "\u{212A}"
        #expect("WebSocket".equalsLowercaseASCII("websocket") && "UPGRADE".equalsLowercaseASCII("upgrade"))
        #expect(!"websoc\(kelvin)et".equalsLowercaseASCII("websocket") && !"websockets".equalsLowercaseASCII("websocket"))
        #expect("A.\(kelvin)".lowercasedASCII == "a.\(kelvin)")
        let lookalike = RequestHeadFacts(HTTPHeaders([("Host", "a"), ("Upgrade", "websoc\(kelvin)et"), ("Connection", "Upgrade")]))
        #expect(lookalike.isUpgrade && !lookalike.isWebSocketHandshake)
        let genuine = RequestHeadFacts(HTTPHeaders([("Host", "a"), ("Upgrade", "WebSocket"), ("Connection", "keep-alive, UPGRADE")]))
        #expect(genuine.isWebSocketHandshake)
        let coding = RequestHeadFacts(HTTPHeaders([("Host", "a"), ("Transfer-Encoding", "chun\(kelvin)ed")]))
        #expect(coding.framingProblem(version: .http1_1) == "transfer_coding_not_chunked")
        #expect(RequestHeadFacts(HTTPHeaders([("Host", "a"), ("Transfer-Encoding", "Chunked")])).framingProblem(version: .http1_1) == nil)
        #expect(ProxyHeaders.scheme("HTTPS") == "https" && ProxyHeaders.scheme("http\u{17F}") == nil)
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
