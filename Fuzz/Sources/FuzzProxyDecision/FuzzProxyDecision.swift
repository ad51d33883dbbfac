import AuthGateCore
import AuthGateHTTP
import Foundation
import FuzzSupport
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzProxyDecision_main")
public func fuzzProxyDecisionMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzProxyDecision(data, size) }
}

/// The edge proxy's decision on a request head, exactly as a client's bytes reach it: through
/// SwiftNIO's HTTP/1.1 parser, then ``EdgeProxy/prepare(_:peer:now:)``. The text `TOKEN` in the
/// input stands for a real anonymous user's access token, `ADMIN` for a service-role one, so the
/// fuzzer reaches every policy branch.
///
/// Properties: never a trap; a forwarded request matched a route whose prefix is a segment
/// prefix of the normalized path, carries exactly that path upstream (past `strip_prefix`), and
/// passes the route's policy (a token on `required` routes, no anonymous user where anonymous
/// users are refused, the required claims); no identity header reaches an upstream unless the
/// gateway set it from a verified token; no browser flow cookie (``FlowCookie``) reaches an
/// upstream, and every other cookie pair does, as it came, in one `Cookie` field; no WebSocket subprotocol of the
/// gateway's (`authgate`, `authgate.bearer.<token>`, any case) reaches an upstream.
public func fuzzProxyDecision(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    var text = String(decoding: input.rest(), as: UTF8.self)
    text = text.replacingOccurrences(of: "TOKEN", with: ProxyFixture.anonymousToken).replacingOccurrences(of: "ADMIN", with: ProxyFixture.adminToken)
    for head in ProxyFixture.heads(from: Array(text.utf8)) {
        var decision = ProxyFixture.edge.prepare(head, peer: nil, now: ProxyFixture.now)
        if case .checkRevocation(let pending) = decision {
            decision = runBlocking { await ProxyFixture.edge.completeAuthorization(pending) }
        }
        guard case .forward(let plan) = decision else { continue }
        ProxyFixture.check(plan, for: head)
    }
    return 0
}

/// A gateway's dependencies with four routes and two tokens minted at start.
enum ProxyFixture {
    static let yaml = """
        providers: { anonymous: { enabled: true } }
        routes:
          - { name: open, path_prefix: /public/, upstreams: ["http://127.0.0.1:9001"], auth: public }
          - { name: api, path_prefix: /api, upstreams: ["http://127.0.0.1:9002"], auth: required, strip_prefix: true }
          - { name: members, path_prefix: /members/, upstreams: ["http://127.0.0.1:9003/base"], auth: required, allow_anonymous: true }
          - { name: admin, path_prefix: /admin/, upstreams: ["http://127.0.0.1:9004"], auth: required, allow_anonymous: true, require_claims: { role: service_role } }
          - { name: maybe, path_prefix: /maybe, upstreams: ["http://127.0.0.1:9005"], auth: optional, allow_anonymous: true }
        tokens: { signing_keys: [ { kid: fuzz, file: fuzz.pem } ] }
        """

    /// The configuration and the signing key it names (the fixed fuzz key, written to a file).
    /// Where the key file is written; removed when the fuzzer exits.
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("authgate-fuzz-proxy-\(getpid())")

    static let setup: (configuration: AuthGateConfiguration, keyRing: SigningKeyRing) = {
        atexit { try? FileManager.default.removeItem(at: ProxyFixture.directory) }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FuzzProvider.privateKeyPEM.write(to: directory.appendingPathComponent("fuzz.pem"), atomically: true, encoding: .utf8)
            let configuration = try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: directory.path, environment: [:])
            return (configuration, try SigningKeyRing.load(configuration.tokens, allowGenerated: false))
        } catch {
            fatalError("the proxy fixture does not start: \(error)")
        }
    }()

    static let dependencies = GatewayApplication.Dependencies(
        configuration: setup.configuration,
        store: MemoryAuthStore(),
        keyRing: setup.keyRing,
        upstreamConnections: UpstreamConnectionPool(maxConnectionsPerUpstream: 1),
        logger: FuzzProvider.quietLogger
    )

    static var edge: EdgeProxy {
        guard let edge = dependencies.edge else { fatalError("the proxy fixture has no edge proxy") }
        return edge
    }

    /// The moment the tokens were minted: every decision is made then.
    static let now = Date()

    /// An anonymous user's access token.
    static let anonymousToken: String = runBlocking {
        guard let accounts = dependencies.accounts, let session = try? await accounts.signUpAnonymously(data: [:], now: now) else {
            fatalError("the proxy fixture could not sign up")
        }
        return session.accessToken
    }

    /// A token with `role: service_role`, for the admin route.
    static let adminToken: String = runBlocking {
        guard let accounts = dependencies.accounts, let session = try? await accounts.signUpAnonymously(data: [:], now: now) else {
            fatalError("the proxy fixture could not sign up")
        }
        guard let claims = try? accounts.accessTokens.verify(session.accessToken, now: now) else { fatalError("the fixture's token does not verify") }
        var elevated = claims
        elevated.role = "service_role"
        guard let token = try? AccessTokenIssuer(keyRing: setup.keyRing).mint(elevated) else {
            fatalError("the fixture could not mint a service-role token")
        }
        return token
    }

    /// The request heads SwiftNIO's parser reads from `bytes` (several when pipelined).
    static func heads(from bytes: [UInt8]) -> [HTTPRequestHead] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        do {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
            var buffer = channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            try channel.writeInbound(buffer)
        } catch {
            // A parse error ends the connection; the heads read before it were decided.
        }
        var heads: [HTTPRequestHead] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            if case .head(let head) = part { heads.append(head) }
        }
        return heads
    }

    /// The properties every forwarded request must have.
    static func check(_ plan: ProxyPlan, for head: HTTPRequestHead) {
        let configuration = plan.route.configuration
        guard let target = try? RequestTarget.normalize(head.uri) else {
            fuzzCheck(false, "forwarded a target the normalizer refuses: \(head.uri.debugDescription)")
            return
        }
        fuzzCheck(
            plan.target.path == target.path, "decided on \(plan.target.path.debugDescription), not the normalized \(target.path.debugDescription)")
        let prefix = configuration.pathPrefix
        fuzzCheck(target.path.hasPrefix(prefix), "route \(configuration.name) matched \(target.path.debugDescription)")
        let upstream = plan.upstreamHead
        let expected = RouteTable.upstreamPath(for: target.path, route: configuration, upstream: plan.upstream)
        fuzzCheck(
            upstream.uri == (target.query.map { expected + "?" + $0 } ?? expected),
            "forwarded \(upstream.uri.debugDescription) for \(target.uri.debugDescription)")
        switch configuration.auth {
        case .required:
            fuzzCheck(plan.claims != nil, "route \(configuration.name) requires a token and forwarded without one")
        case .optional, .public:
            break
        }
        if let claims = plan.claims {
            fuzzCheck(
                configuration.allowAnonymous || !claims.isAnonymous || configuration.auth == .public,
                "route \(configuration.name) forwarded an anonymous user")
            if configuration.name == "admin" {
                fuzzCheck(claims.role == "service_role", "the admin route forwarded role \(claims.role)")
            }
        }
        let prefixLower = dependencies.configuration.proxy.identityHeaderPrefix.lowercased()
        let identity = upstream.headers.filter { $0.name.lowercased().hasPrefix(prefixLower) }
        if plan.claims == nil {
            fuzzCheck(identity.isEmpty, "identity headers \(identity.map(\.name)) reached the upstream without a verified token")
        } else if let claims = plan.claims {
            let userHeaders = identity.filter { $0.name.lowercased() == prefixLower + "user-id" }
            fuzzCheck(
                userHeaders.allSatisfy { $0.value == claims.sub } && userHeaders.count <= 1,
                "the user id header is not the token's subject: \(userHeaders)")
        }
        let sentPairs = cookiePairs(head.headers)
        let forwardedPairs = cookiePairs(upstream.headers)
        fuzzCheck(!forwardedPairs.contains { FlowCookie.isFlowCookie($0.utf8) }, "a flow cookie reached the upstream: \(forwardedPairs)")
        fuzzCheck(
            forwardedPairs == sentPairs.filter { !FlowCookie.isFlowCookie($0.utf8) },
            "the upstream's cookies \(forwardedPairs) are not the client's \(sentPairs) without the flow's")
        fuzzCheck(upstream.headers["cookie"].count <= 1, "several Cookie fields reached the upstream: \(upstream.headers["cookie"])")
        let subprotocols = upstream.headers.filter { $0.name.lowercased().replacingOccurrences(of: "_", with: "-") == "sec-websocket-protocol" }
            .flatMap { $0.value.utf8.split(separator: UInt8(ascii: ",")) }.map(ProxyFixture.asciiLowercasedTrimmed)
        fuzzCheck(
            !subprotocols.contains { $0 == "authgate" || $0.hasPrefix("authgate.bearer.") },
            "a gateway subprotocol reached the upstream: \(subprotocols)")
        let framing = upstream.headers["transfer-encoding"].count + upstream.headers["content-length"].count
        fuzzCheck(framing <= 1, "forwarded ambiguous framing: \(upstream.headers)")
    }

    /// A list element's bytes without spaces and tabs around them, ASCII letters in lower case.
    static func asciiLowercasedTrimmed(_ element: Substring.UTF8View.SubSequence) -> String {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let trimmed = element.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return String(decoding: trimmed.map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The pairs of the `Cookie` fields, in order, each without the spaces before it, empty ones left out.
    static func cookiePairs(_ headers: HTTPHeaders) -> [String] {
        headers["cookie"].flatMap { $0.utf8.split(separator: UInt8(ascii: ";")) }
            .map { String(decoding: $0.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }, as: UTF8.self) }.filter { !$0.isEmpty }
    }
}
