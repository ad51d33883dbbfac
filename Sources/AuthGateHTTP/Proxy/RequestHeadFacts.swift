import NIOHTTP1
import RedisBridge

/// What the decision needs from a request's header lines, read in one pass without allocating
/// per line: the proxy decides every request, and a lookup per fact (each a scan with a
/// case-insensitive compare) cost more than the rest of the decision.
struct RequestHeadFacts {
    /// `Host` lines: how many, and the first one's value.
    var hostCount = 0
    var host: String?
    /// `Content-Length` lines, and the first one's value read once as a number: nil without the
    /// header, or when it is not 1 to 18 digits (``framingProblem(version:)`` refuses that), so
    /// `0` and `00` are the same length to every decision.
    var contentLengthCount = 0
    var contentLength: Int?
    /// The `Transfer-Encoding` codings, lower-cased, in order (empty without the header).
    var transferCodings: [String] = []
    var hasTransferEncoding = false
    var hasUpgrade = false
    var upgradesToWebSocket = false
    var connectionUpgrade = false
    var expectsContinue = false
    /// `Authorization` lines, and the first one's value.
    var authorizationCount = 0
    var authorization: String?
    /// Access tokens offered as WebSocket subprotocols (``WebSocketSubprotocolCredential``): how
    /// many (empty ones not counted), and the first one; and whether `authgate` was offered.
    var subprotocolBearerCount = 0
    var subprotocolBearer: String?
    var offersGatewaySubprotocol = false
    var requestID: String?
    var apiVersion: String?
    /// The first `Origin` (browsers send one), and `Access-Control-Request-Method` (a preflight's).
    var origin: String?
    var corsRequestMethod: String?
    /// The header list's size as HTTP/2 counts it (RFC 9113, 6.5.2): each line's name and value
    /// bytes plus 32.
    var listSize = 0

    init(_ headers: HTTPHeaders) {
        for (name, value) in headers {
            listSize &+= name.utf8.count &+ value.utf8.count &+ 32
            switch name.utf8.count {
            case 4 where name.equalsLowercaseASCII("host"):
                hostCount += 1
                if host == nil { host = value }
            case 6 where name.equalsLowercaseASCII("origin"):
                if origin == nil { origin = value }
            case 29 where name.equalsLowercaseASCII("access-control-request-method"):
                if corsRequestMethod == nil { corsRequestMethod = value }
            case 6 where name.equalsLowercaseASCII("expect"):
                if value.trimmingOWS.equalsLowercaseASCII("100-continue") { expectsContinue = true }
            case 7 where name.equalsLowercaseASCII("upgrade"):
                hasUpgrade = true
                if Self.listContains(value, "websocket") { upgradesToWebSocket = true }
            case 10 where name.equalsLowercaseASCII("connection"):
                if Self.listContains(value, "upgrade") { connectionUpgrade = true }
            case 12 where name.equalsLowercaseASCII("x-request-id"):
                if requestID == nil { requestID = value }
            case 13 where name.equalsLowercaseASCII("authorization"):
                authorizationCount += 1
                if authorization == nil { authorization = value }
            case 14 where name.equalsLowercaseASCII("content-length"):
                contentLengthCount += 1
                if contentLengthCount == 1, value.utf8.count <= 18 { contentLength = DecimalInteger.parse(value, in: 0...Int.max) }
            case 17 where name.equalsLowercaseASCII("transfer-encoding"):
                hasTransferEncoding = true
                for coding in value.split(separator: ",") { transferCodings.append(coding.trimmingOWS.lowercasedASCII) }
            case 22 where name.equalsLowercaseASCII("x-supabase-api-version"):
                if apiVersion == nil { apiVersion = value }
            case 22 where name.equalsLowercaseASCII("sec-websocket-protocol"):
                for element in WebSocketSubprotocolCredential.elements(value) {
                    switch WebSocketSubprotocolCredential.classify(element) {
                    case .other: continue
                    case .marker: offersGatewaySubprotocol = true
                    // Nothing after the prefix is no credential, as `Authorization: Bearer ` is none.
                    case .bearer(let token) where token.isEmpty: continue
                    case .bearer(let token):
                        subprotocolBearerCount += 1
                        if subprotocolBearer == nil { subprotocolBearer = token }
                    }
                }
            default:
                continue
            }
        }
    }

    /// Body parts follow the head: a `Content-Length` over 0, or a transfer coding.
    var hasBody: Bool {
        hasTransferEncoding || (contentLength ?? 0) > 0
    }

    /// The head asks to switch protocols (NIO's decoder stops parsing after such a request).
    var isUpgrade: Bool { hasUpgrade && connectionUpgrade }

    /// The head asks for a WebSocket (whether with `GET` and no body is checked where it is decided).
    var isWebSocketHandshake: Bool { isUpgrade && upgradesToWebSocket }

    /// The access token the request authenticates with: on a WebSocket handshake the one offered
    /// as a subprotocol when there is one, else the `Authorization` header's bearer token.
    /// ``EdgeProxy`` refuses a request that offers more than one before it is asked.
    var bearer: String? {
        if isWebSocketHandshake, let subprotocolBearer { return subprotocolBearer }
        return authorization.flatMap(RequestSupport.bearerToken(authorization:))
    }

    /// The client may send another request on the connection after `head` (these are its facts):
    /// an HTTP/2 stream ends with its answer while the connection goes on; an upgrade never
    /// returns to HTTP.
    func keepsAlive(_ head: HTTPRequestHead) -> Bool {
        (head.version.major >= 2 || head.isKeepAlive) && !isUpgrade
    }

    /// Why the body's length is ambiguous, or nil. NIO's parser already refuses `Content-Length`
    /// with `Transfer-Encoding`, repeated or listed `Content-Length` and obs-fold; this adds what it
    /// lets through: a transfer coding other than exactly `chunked` (RFC 9112 §6.3: the length
    /// cannot be determined), any transfer coding in an HTTP/1.0 request (§6.1), and a
    /// `Content-Length` that is not a plain number.
    func framingProblem(version: HTTPVersion) -> String? {
        if hasTransferEncoding {
            // RFC 9112, 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing (a
            // 1.0 hop before or after the gateway may not read it as chunked).
            guard version.isAtLeastHTTP11 else { return "transfer_coding_in_http_1_0" }
            guard transferCodings == ["chunked"] else { return "transfer_coding_not_chunked" }
            guard contentLengthCount == 0 else { return "length_and_transfer_coding" }
        }
        if contentLengthCount > 1 { return "several_content_lengths" }
        if contentLengthCount == 1, contentLength == nil { return "content_length_not_a_number" }
        return nil
    }

    /// A comma-separated header value holds `token` (ASCII case-insensitive, spaces trimmed).
    private static func listContains(_ value: String, _ token: String) -> Bool {
        value.split(separator: ",").contains { $0.trimmingOWS.equalsLowercaseASCII(token) }
    }
}
