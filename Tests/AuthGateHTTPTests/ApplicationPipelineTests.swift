import AuthGateCore
import AuthGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Testing

@testable import AuthGateHTTP

/// AuthGate's own endpoints answered from the connection (``ApplicationPipeline``) on real
/// sockets: pipelined requests in order, framing, keep-alive and close, and the requests that
/// still stream through Hummingbird's channel (chunked, large, `HEAD`) on the same connection.
@Suite("Router called from the connection", .serialized, .timeLimit(.minutes(2)))
struct ApplicationPipelineTests {
    /// One response as read off the wire.
    struct Answer {
        let status: Int
        /// Header names lower-cased.
        let headers: [(String, String)]
        let body: String

        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    }

    private func withGateway(_ body: @Sendable (Int) async throws -> Void) async throws {
        let configuration = try AuthGateConfiguration.parse(
            yaml: "providers: { anonymous: { enabled: true } }\nrate_limits: { token: off, signup: off, nonce: off }", baseDirectory: "",
            environment: [:])
        let dependencies = GatewayApplication.Dependencies(
            configuration: configuration, store: MemoryAuthStore(), keyRing: try SigningKeyRing.load(configuration.tokens, allowGenerated: true))
        let app = GatewayApplication.build(dependencies, logger: Logger(label: "pipeline-test"))
        try await app.test(.live) { client in try await body(try #require(client.port)) }
    }

    /// Sends `requests` on a new connection and reads every answer until the gateway closes it.
    private func exchange(_ requests: String, port: Int) async throws -> (answers: [Answer], closed: Bool) {
        let connection = try RawConnection(port: port)
        await connection.send(requests)
        return try await readAnswers(connection)
    }

    /// Every answer on `connection` until it closes.
    private func readAnswers(_ connection: RawConnection) async throws -> (answers: [Answer], closed: Bool) {
        let (bytes, closed) = await connection.receiveUntilClosed()
        var rest = bytes[...]
        var answers: [Answer] = []
        let separator = Array("\r\n\r\n".utf8)
        while !rest.isEmpty {
            let end = try #require(
                rest.indices.first { rest[$0...].starts(with: separator) }, "an incomplete head: \(String(decoding: rest, as: UTF8.self))")
            let lines = String(decoding: rest[..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let status = try #require(Int(lines[0].split(separator: " ")[1]))
            let headers = lines.dropFirst().map { line -> (String, String) in
                let colon = line.firstIndex(of: ":") ?? line.endIndex
                return (line[..<colon].lowercased(), line[colon...].dropFirst().trimmingCharacters(in: .whitespaces))
            }
            let length = headers.first { $0.0 == "content-length" }.flatMap { Int($0.1) } ?? 0
            let bodyStart = end + 4
            try #require(rest.endIndex - bodyStart >= length, "a body cut short")
            answers.append(Answer(status: status, headers: headers, body: String(decoding: rest[bodyStart..<bodyStart + length], as: UTF8.self)))
            rest = rest[(bodyStart + length)...]
        }
        return (answers, closed)
    }

    @Test(
        "pipelined requests are answered in order, each with its own request id and a Date; after Connection: close, nothing more"
    )
    func pipelined() async throws {
        try await withGateway { port in
            let (answers, closed) = try await exchange(
                "POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 2\r\nX-Request-Id: first\r\n\r\n{}"
                    + "GET /auth/v1/settings HTTP/1.1\r\nHost: gw\r\nX-Request-Id: second\r\n\r\n"
                    + "GET /auth/v1/user HTTP/1.1\r\nHost: gw\r\nX-Request-Id: third\r\n\r\n"
                    + "GET /auth/v1/./settings HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nX-Request-Id: fourth\r\n\r\n"
                    + "GET /auth/v1/settings HTTP/1.1\r\nHost: gw\r\n\r\n", port: port)
            try #require(answers.map(\.status) == [200, 200, 401, 200], "nothing is answered after Connection: close; closed: \(closed)")
            #expect(answers.map { $0.header("x-request-id") } == ["first", "second", "third", "fourth"])
            #expect(answers[0].body.contains("\"access_token\""))
            #expect(answers[2].body.contains("no_authorization"))
            #expect(answers[3].header("connection") == "close")
            #expect(closed)
            let dates = answers.compactMap { $0.header("date") }
            #expect(dates.count == 4 && dates.allSatisfy { $0.hasSuffix(" GMT") && $0.count == 29 }, "\(dates)")
        }
    }

    @Test("bytes that cannot be parsed after complete requests: those are answered first, in order, then a 400, then the connection ends")
    func unparsableAfterPipelined() async throws {
        try await withGateway { port in
            let (answers, closed) = try await exchange(
                "POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
                    + "GET /auth/v1/settings HTTP/1.1\r\nHost: gw\r\n\r\n"
                    + "GET /auth/v1/settings HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", port: port)
            #expect(answers.map(\.status) == [200, 200, 400])
            #expect(answers.last?.body.contains("validation_failed") == true)
            #expect(closed)
        }
    }

    @Test(
        "chunked, large and HEAD requests stream through Hummingbird's channel on the same connection, between requests served directly; HEAD answers as GET without a body"
    )
    func streamedRequests() async throws {
        try await withGateway { port in
            let connection = try RawConnection(port: port)
            let large = String(repeating: " ", count: 70_000) + "{}"
            await connection.send(
                "POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
                    + "GET /auth/v1/settings HTTP/1.1\r\nHost: gw\r\n\r\n"
                    + "HEAD /auth/v1/settings HTTP/1.1\r\nHost: gw\r\n\r\n"
                    + "POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
                    + "POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: \(large.utf8.count)\r\n\r\n\(large)"
            )
            // The HEAD answer has a Content-Length but no body: read it apart.
            var received: [UInt8] = []
            while !String(decoding: received, as: UTF8.self).contains("413 ") {
                let more = await connection.receive()
                try #require(!more.isEmpty, "answers stopped: \(String(decoding: received, as: UTF8.self))")
                received += more
            }
            let text = String(decoding: received, as: UTF8.self)
            let answers = Array(text.components(separatedBy: "HTTP/1.1 ").dropFirst())
            #expect(answers.map { $0.prefix(3) } == ["200", "200", "200", "200", "413"], "\(text)")
            // HEAD is GET's answer without the body: the same Content-Length, then the next answer.
            func contentLength(_ answer: String) -> String? {
                answer.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            }
            if answers.count == 5 {
                #expect(contentLength(answers[2]) != nil && contentLength(answers[2]) == contentLength(answers[1]), "\(text)")
                #expect(answers[2].hasSuffix("\r\n\r\n") && answers[1].hasSuffix("}"), "\(text)")
            }
            #expect(text.components(separatedBy: "\"access_token\"").count == 3, "both sign-ups succeed")
        }
    }

    @Test("HTTP/1.0: answered and closed, or kept alive when asked for")
    func http10() async throws {
        try await withGateway { port in
            let (answers, closed) = try await exchange("GET /auth/v1/settings HTTP/1.0\r\n\r\n", port: port)
            #expect(answers.count == 1 && answers.first?.status == 200 && closed)

            let (both, keptClosed) = try await exchange(
                "GET /auth/v1/settings HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /auth/v1/settings HTTP/1.0\r\n\r\n", port: port)
            #expect(both.map(\.status) == [200, 200])
            #expect(both.first?.header("connection") == "keep-alive")
            #expect(keptClosed)
        }
    }

    @Test("a body cut short by the client's close ends the connection without an answer, and the gateway goes on")
    func bodyCutShort() async throws {
        try await withGateway { port in
            let connection = try RawConnection(port: port)
            await connection.send("POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Length: 100\r\n\r\n{\"data\":")
            connection.shutdownWrite()
            let (bytes, closed) = await connection.receiveUntilClosed()
            #expect(closed)
            #expect(!String(decoding: bytes, as: UTF8.self).contains("200 OK"))
            #expect(
                try await exchange("GET /auth/v1/settings HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n", port: port).answers.map(\.status) == [
                    200
                ])
        }
    }

    @Test("the Date header is IMF-fixdate, as Foundation writes it")
    func imfFixdate() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        let samples: [Int64] = [0, 784_111_777, 951_782_400, 1_709_164_800, 4_107_542_399, 253_402_300_799]
        for seconds in samples + (0..<2000).map({ _ in Int64.random(in: 0...253_402_300_799, using: &generator) }) {
            #expect(HTTPDate.imfFixdate(secondsSince1970: seconds) == formatter.string(from: Date(timeIntervalSince1970: Double(seconds))))
        }
        #expect(HTTPDate.imfFixdate(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        var date = HTTPDate()
        #expect(date.current(Date(timeIntervalSince1970: -5)) == "Thu, 01 Jan 1970 00:00:00 GMT", "clamped, never a trap")
        #expect(date.current(Date(timeIntervalSince1970: .infinity)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(date.current(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test(
        "the bearer token is read alike whichever way the request came: gathered here (beside the fields) or through Hummingbird's channel (in them)")
    func bearerOnBothPaths() async throws {
        try await withGateway { port in
            let signup = try await exchange(
                "POST /auth/v1/signup HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                port: port)
            let session = try JSONSerialization.jsonObject(with: Data(try #require(signup.answers.first).body.utf8)) as? [String: Any]
            let token = try #require(session?["access_token"] as? String)
            let userID = try #require((session?["user"] as? [String: Any])?["id"] as? String)
            /// `GET /user` with `lines`; through Hummingbird's channel when it has a (chunked, empty) body.
            func user(_ lines: [String], streamed: Bool) async throws -> Answer {
                let framing = streamed ? "Transfer-Encoding: chunked\r\n" : ""
                let head = "GET /auth/v1/user HTTP/1.1\r\nHost: gw\r\n" + lines.map { $0 + "\r\n" }.joined() + framing + "Connection: close\r\n\r\n"
                return try #require(try await exchange(head + (streamed ? "0\r\n\r\n" : ""), port: port).answers.first)
            }
            for streamed in [false, true] {
                for line in ["Authorization: Bearer \(token)", "authorization: bearer \(token)", "AUTHORIZATION: \tBEARER \(token)  "] {
                    let answer = try await user([line], streamed: streamed)
                    #expect(answer.status == 200, "\(line), streamed: \(streamed)")
                    #expect(answer.body.contains("\"id\":\"\(userID)\""), "\(line), streamed: \(streamed)")
                }
                for lines in [[], ["Authorization: Basic \(token)"], ["Authorization: Bearer"], ["Authorization: Bearer \(token)x"]] {
                    let answer = try await user(lines, streamed: streamed)
                    #expect(answer.status == 401 || answer.status == 403, "\(lines), streamed: \(streamed)")
                    #expect(!answer.body.contains(userID), "\(lines), streamed: \(streamed)")
                }
                let twice = try await user(["Authorization: Bearer \(token)", "Authorization: Bearer \(token)"], streamed: streamed)
                #expect(twice.status == 400 && twice.body.contains("More than one Authorization header"), "streamed: \(streamed)")
            }
            // The same answers as before for the refusals: no token at all is GoTrue's no_authorization.
            #expect(try await user([], streamed: false).body.contains("no_authorization"))
            #expect(try await user([], streamed: true).body.contains("no_authorization"))
        }
    }

    @Test("requests are converted to HTTPTypes exactly as NIOHTTPTypesHTTP1 converts them, for random heads")
    func conversionMatchesTheLibrary() throws {
        var generator = SystemRandomNumberGenerator()
        let names = [
            "Host", "host", "HOST", "hOsT", "Authorization", "content-type", "Content-Length", "apikey", "X-Client-Info", "Cookie",
            "Hosts", "hos", "Accept", "x-request-id"
        ]
        let values = ["example.com", "127.0.0.1:8080", "", "Bearer abc.def.ghi", "a=1; b=2", "text/plain; charset=utf-8", "v\u{e9}"]
        let targets = [
            "/auth/v1/user", "/", "/auth/v1/token?grant_type=refresh_token", "/a:b/c?x=http://y", "//double", "*",
            "http://example.com/path?q=1", "/%2e%2e/x"
        ]
        let methods: [HTTPMethod] = [.GET, .POST, .PUT, .DELETE, .OPTIONS, .PATCH, .RAW(value: "PURGE")]
        for secure in [false, true] {
            for _ in 0..<2000 {
                var headers = HTTPHeaders()
                for _ in 0..<Int.random(in: 0...6, using: &generator) {
                    headers.add(name: names.randomElement(using: &generator)!, value: values.randomElement(using: &generator)!)
                }
                let head = HTTPRequestHead(
                    version: .http1_1, method: methods.randomElement(using: &generator)!, uri: targets.randomElement(using: &generator)!,
                    headers: headers)
                let expected = try? HTTPRequest(head, secure: secure, splitCookie: false)
                let converted = ApplicationPipeline.convert(head, secure: secure)
                #expect(converted?.head == expected, "\(head)")
                #expect(converted?.head.headerFields.map(\.name.rawName) == expected?.headerFields.map(\.name.rawName), "\(head)")
                #expect(converted.map { $0.authorization == nil } ?? true, "\(head)")
                // What the pipeline serves (at most one Authorization line, which the decision
                // checked): the same head, its Authorization value beside the fields, not in them.
                guard head.headers["authorization"].count <= 1 else { continue }
                let taken = ApplicationPipeline.convert(head, secure: secure, takingAuthorization: true)
                if head.uri.hasPrefix("/") {
                    var withoutAuthorization = expected
                    withoutAuthorization?.headerFields[.authorization] = nil
                    #expect(taken?.head == withoutAuthorization, "\(head)")
                    #expect(taken?.authorization == head.headers.first(name: "authorization"), "\(head)")
                } else {
                    #expect(taken?.head == expected && taken?.authorization == nil, "\(head)")
                }
            }
        }
    }
}
