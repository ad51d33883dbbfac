import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

/// Thousands of generated request heads (dot segments, percent-encodings, duplicate and oddly
/// spelled headers, framing variants, upgrades, tokens good and bad) against a running gateway in
/// front of recording upstreams. Whatever comes, the process lives and answers every request;
/// a protected upstream never sees a request without the right token; no upstream sees a path
/// outside the route that matched, a dot segment, or an identity header it did not get from the
/// gateway.
@Suite("Random request heads", .serialized, .timeLimit(.minutes(5)))
struct RandomRequestHeadTests {
    static let requestCount = 3_000

    @Test("the gateway survives and decides rightly on 3,000 generated request heads")
    func randomHeads() async throws {
        let rig = try await EdgeRig(extraServer: ", client_idle_timeout: 2s", logLevel: "debug")
        let token = try await rig.anonymousToken()
        var generator = SeededGenerator(seed: 0xA11CE)
        var unanswered: [String] = []
        for index in 0..<Self.requestCount {
            let request = Self.request(token: token, using: &generator)
            let connection = try RawConnection(port: rig.server.port)
            await connection.send(bytes: request)
            let (bytes, closed) = await connection.receiveUntilClosed()
            if !closed || !bytes.starts(with: Array("HTTP/1.".utf8)) {
                let failure = connection.receiveError
                let outcome =
                    closed
                    ? "closed after \(bytes.count) bytes"
                    : "receive failed with errno \(failure) (\(String(cString: strerror(failure)))) after \(bytes.count) bytes"
                // The whole head (the token's end tells a tampered one) and the body's size.
                let text = String(decoding: request, as: UTF8.self)
                let head = text.components(separatedBy: "\r\n\r\n").first ?? text
                unanswered.append("#\(index) (\(outcome)): \(head.debugDescription) + \(request.count - head.utf8.count - 4)-byte body")
            }
            if index % 250 == 0 {
                try #require(rig.server.isRunning, "the gateway died after request \(index):\n\(rig.server.log.suffix(3000))")
            }
        }
        #expect(rig.server.isRunning, "\(rig.server.log.suffix(3000))")
        let notable = rig.server.log.split(separator: "\n").filter { !$0.contains("\"info\"") && !$0.contains(" info ") }.suffix(40)
        #expect(
            unanswered.isEmpty,
            "\(unanswered.count) requests got no answer, like: \(unanswered.prefix(3))\nthe gateway's log:\n\(notable.joined(separator: "\n"))")

        #expect(rig.members.requests.isEmpty, "members (no anonymous users) was reached: \(rig.members.requests.prefix(3).map(\.uri))")
        #expect(rig.admin.requests.isEmpty, "admin (service_role only) was reached: \(rig.admin.requests.prefix(3).map(\.uri))")
        let userID = try Self.subject(of: token)
        for request in rig.open.requests {
            #expect(request.uri.hasPrefix("/public/"), "the open upstream got \(request.uri)")
            Self.expectCanonical(request)
            #expect(
                !request.headers.contains { Self.folded($0.name).hasPrefix("x-authgate-") }, "identity header on a public route: \(request.headers)")
        }
        for request in rig.api.requests {
            Self.expectCanonical(request)
            #expect(request.values("x-authgate-user-id") == [userID], "\(request.uri): \(request.headers)")
            #expect(request.values("x-authgate-anonymous") == ["true"])
            let identity = request.headers.filter { Self.folded($0.name).hasPrefix("x-authgate-") }
            #expect(identity.count == Set(identity.map { Self.folded($0.name) }).count, "a client-sent identity header survived: \(identity)")
        }
        #expect(
            rig.open.requests.count > 50 && rig.api.requests.count > 50,
            "too few requests got through to learn anything: \(rig.open.requests.count) open, \(rig.api.requests.count) api"
        )
        #expect(await rig.stop() == 0)
    }

    /// A path the upstream can resolve only one way.
    private static func expectCanonical(_ request: RecordingUpstream.Request) {
        let path = String(request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        #expect(!segments.dropLast().contains(""), "an empty segment in \(request.uri)")
        #expect(!segments.contains(".") && !segments.contains(".."), "a dot segment in \(request.uri)")
        let names = segments.map { $0.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "" }
        #expect(!names.contains(".") && !names.contains(".."), "a dot segment with parameters in \(request.uri)")
        for forbidden in ["\\", "%2e", "%2E", "%2f", "%2F", "%5c", "%5C", "%00", "%41", "%7e"] {
            #expect(!path.contains(forbidden), "\(forbidden) in \(request.uri)")
        }
    }

    private static func folded(_ name: String) -> String {
        name.lowercased().replacingOccurrences(of: "_", with: "-")
    }

    private static func subject(of token: String) throws -> String {
        let payload = try #require(token.split(separator: ".").dropFirst().first)
        let claims = try #require(try JSONValue.parse(Base64URL.decode(String(payload)) ?? []).objectValue)
        return try #require(claims["sub"]?.stringValue)
    }

    // MARK: Generation

    /// Weighted toward the routes whose upstreams record what they get.
    private static let prefixes = [
        "/public/", "/public/", "/public/", "/api", "/api/", "/api/", "/members/", "/admin/", "/auth/v1/", "/", "/early/", "/early-anon/", "/nowhere/"
    ]
    private static let pieces = [
        "a", "b", "x", "users", ".", "..", "/", "//", "%2e", "%2E", "%2e%2e", ".%2e", "%2f", "%2F", "%5c", "\\", "%00", "%41", "%7e", ";",
        "..;", ";x=1", "~", "%", "%g1", "é", "%20", "%25", "members", "admin", "public", "api", "?", "?q=../x", "#f", "*"
    ]
    private static let identityNames = [
        "X-AuthGate-User-Id", "x-authgate-user-id", "X_AuthGate_User_Id", "X-AUTHGATE-ROLE", "X-AuthGate_Role", "x_authgate_anonymous",
        "X-AuthGate-Session-Id", "X-Forwarded-For", "X_Forwarded_For", "X-Real-IP", "Forwarded", "X-Request-Id"
    ]

    private static func request(token: String, using generator: inout SeededGenerator) -> [UInt8] {
        let methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "get", "CONNECT", "TRACE"]
        let method = methods.randomElement(using: &generator) ?? "GET"
        var target = prefixes.randomElement(using: &generator) ?? "/"
        // Half of the targets use harmless pieces only, so that many requests get through.
        let harmless = Bool.random(using: &generator)
        for _ in 0..<Int.random(in: 0...6, using: &generator) {
            let piece =
                harmless
                ? ["a", "b/", "x", "./", "c/../", "%41", "%7e", "~"].randomElement(using: &generator) : pieces.randomElement(using: &generator)
            target += piece ?? ""
        }
        if Int.random(in: 0..<20, using: &generator) == 0 { target = "http://gw" + target }
        var lines = ["\(method) \(target) HTTP/1.1"]
        switch Int.random(in: 0..<20, using: &generator) {
        case 0: break
        case 1: lines += ["Host: gw", "Host: other"]
        case 2: lines.append("Host: bad host")
        default: lines.append(["Host: gw", "host: GW.", "Host: gw:8080"].randomElement(using: &generator) ?? "Host: gw")
        }
        switch Int.random(in: 0..<8, using: &generator) {
        case 0, 1, 2, 3: lines.append("Authorization: Bearer \(token)")
        case 4: lines.append("authorization: bearer \(token)")
        case 5: lines.append("Authorization: Bearer \(token.dropLast(3))abc")
        case 6: lines.append("Authorization: Bearer")
        default: break
        }
        for _ in 0..<Int.random(in: 0...3, using: &generator) {
            let name = identityNames.randomElement(using: &generator) ?? "X-AuthGate-User-Id"
            let value = ["admin", "service_role", "false", "6.6.6.6"].randomElement(using: &generator) ?? "admin"
            lines.append("\(name): \(value)")
        }
        var body: [UInt8] = []
        switch Int.random(in: 0..<12, using: &generator) {
        case 0:
            body = Array(repeating: 0x61, count: Int.random(in: 1...5000, using: &generator))
            lines.append("Content-Length: \(body.count)")
        case 1:
            let chunk = Array(repeating: UInt8(0x62), count: Int.random(in: 1...3000, using: &generator))
            lines.append("Transfer-Encoding: chunked")
            body = Array("\(String(chunk.count, radix: 16))\r\n".utf8) + chunk + Array("\r\n0\r\n\r\n".utf8)
        case 2: lines += ["Content-Length: 3", "Content-Length: 4"]; body = Array("abcd".utf8)
        case 3: lines += ["Content-Length: 3", "Transfer-Encoding: chunked"]; body = Array("0\r\n\r\n".utf8)
        case 4:
            let codings = ["Transfer-Encoding: identity, chunked", "Transfer-Encoding: xchunked", "Transfer-Encoding: chunked, gzip"]
            lines.append(codings.randomElement(using: &generator) ?? "Transfer-Encoding: xchunked")
        case 5: lines += ["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
        case 6: lines += ["Upgrade: h2c", "Connection: Upgrade, HTTP2-Settings", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"]
        case 7: lines += ["Expect: 100-continue", "Content-Length: 5"]; body = Array("hello".utf8)
        case 8: lines.append("Content-Length: 0")
        default: break
        }
        lines.append("Connection: close")
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
    }
}
