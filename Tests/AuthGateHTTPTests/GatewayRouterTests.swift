import AuthGateCore
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AuthGateHTTP

@Suite("The router's table of constant paths answers as Hummingbird's trie", .timeLimit(.minutes(2)))
struct GatewayRouterTests {
    static let trail = HTTPField.Name.constant("x-trail")

    /// Adds `x-trail` with `name` to every answer that passes through it (the order of the
    /// middleware around a route shows in the header's values).
    struct Mark: RouterMiddleware {
        typealias Context = BasicRequestContext
        let name: String

        @concurrent func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws
            -> Response
        {
            var response = try await next(request, context)
            response.headers.append(HTTPField(name: GatewayRouterTests.trail, value: name))
            return response
        }
    }

    /// Routes where the trie's order could matter: a capture route registered before a constant
    /// path it could take, wildcards, groups with their own middleware, middleware added between
    /// routes, a handler that throws an `HTTPResponseError`, the root.
    static func register(on router: some RouterMethods<BasicRequestContext>) {
        func answer(_ name: String) -> @Sendable (Request, BasicRequestContext) async throws -> String {
            { _, context in "\(name) endpoint=\(context.endpointPath ?? "nil") id=\(context.parameters.get("id") ?? "-")" }
        }
        _ = router.add(middleware: Mark(name: "outer"))
        router.get("/", use: answer("root"))
        router.get("/shadow/:id/x", use: answer("capture-x"))
        router.get("/shadow/user", use: answer("shadow-user"))
        router.get("/user", use: answer("user"))
        router.put("/user", use: answer("user-put"))
        router.get("/auth/v1/user", use: answer("auth-user"))
        router.get("/auth/v1/admin/users/:id", use: answer("admin-user"))
        router.get("/auth/v1/admin/users", use: answer("admin-users"))
        router.get("/auth/v1/admin/users/search", use: answer("admin-search"))
        router.get("/files/*.json", use: answer("json-file"))
        router.get("/files/a.json", use: answer("a-json"))
        router.get("/files/a.txt", use: answer("a-txt"))
        router.get("/static/**", use: answer("static-any"))
        router.get("/static/index.html", use: answer("static-index"))
        router.get("/fails") { _, _ -> String in throw HTTPError(.conflict, message: "taken") }
        let group = router.group("/grouped").add(middleware: Mark(name: "group"))
        group.post("/token", use: answer("grouped-token"))
        _ = router.add(middleware: Mark(name: "late"))
        router.get("/late", use: answer("late"))
    }

    static let requests: [(HTTPRequest.Method, String)] = [
        (.get, "/"), (.get, "/user"), (.put, "/user"), (.delete, "/user"), (.get, "/user/"), (.get, "//user"), (.get, "/user?q=1"),
        (.get, "/shadow/user"), (.get, "/shadow/abc/x"), (.get, "/auth/v1/user"), (.get, "/auth/v1/user/"), (.get, "/auth/v1/admin/users"),
        (.get, "/auth/v1/admin/users/7"),
        (.get, "/auth/v1/admin/users/search"), (.get, "/files/a.json"), (.get, "/files/b.json"), (.get, "/files/a.txt"),
        (.get, "/static/index.html"), (.get, "/static/css/site.css"), (.get, "/fails"), (.post, "/grouped/token"), (.get, "/grouped/token"),
        (.get, "/late"), (.get, "/missing"), (.head, "/auth/v1/user"), (.get, "/AUTH/v1/user"), (.get, "/auth/v1/us%65r"),
        (.get, "/user?"), (.get, "/user#x"), (.get, "/user?a=1?b"), (.get, "http://example.com/user"), (.get, "http://example.com/user?q=1"),
        (.get, "*"), (.get, "?q=/user")
    ]

    /// One answer, reduced to what a client sees.
    struct Answer: Equatable, CustomStringConvertible {
        let status: HTTPResponse.Status
        let trail: [String]
        let body: String
        var description: String { "\(status.code) \(trail) \(body)" }
    }

    func answers<Builder: HTTPResponderBuilder>(_ router: Builder) async throws -> [Answer] where Builder.Responder.Context == BasicRequestContext {
        try await Application(router: router).test(.router) { client in
            var answers: [Answer] = []
            for (method, path) in Self.requests {
                answers.append(
                    try await client.execute(uri: path, method: method) { response in
                        Answer(
                            status: response.status, trail: response.headers[values: GatewayRouterTests.trail], body: String(buffer: response.body))
                    })
            }
            return answers
        }
    }

    @Test("every request gets the same answer (status, middleware, body, endpoint path) from the gateway's router as from Hummingbird's")
    func sameAnswers() async throws {
        let reference = Router(options: .autoGenerateHeadEndpoints)
        Self.register(on: reference)
        let gateway = GatewayRouter(context: BasicRequestContext.self)
        Self.register(on: gateway)
        let expected = try await answers(reference)
        let actual = try await answers(gateway)
        for (index, (method, path)) in Self.requests.enumerated() {
            #expect(actual[index] == expected[index], "\(method) \(path)")
        }
        func answer(_ method: HTTPRequest.Method, _ path: String) throws -> Answer {
            actual[try #require(Self.requests.firstIndex { $0.0 == method && $0.1 == path })]
        }
        // The trie tries constants first: the capture route registered before `/shadow/user` does not take it.
        #expect(try answer(.get, "/shadow/user").body == "shadow-user endpoint=/shadow/user id=-")
        #expect(try answer(.get, "/shadow/abc/x").body == "capture-x endpoint=/shadow/{id}/x id=abc")
        // What the table answers, with its endpoint path and the middleware of the moment.
        #expect(try answer(.get, "/auth/v1/user").body == "auth-user endpoint=/auth/v1/user id=-")
        #expect(try answer(.get, "/auth/v1/user").trail == ["outer"])
        #expect(try answer(.post, "/grouped/token").trail == ["group", "outer"])
        #expect(try answer(.get, "/late").trail == ["late", "outer"])
        #expect(try answer(.get, "/fails").status == .conflict)
        #expect(try answer(.get, "/missing").status == .notFound)
    }

    @Test("the table holds the constant paths no pattern route can reach, by method")
    func tableContents() {
        let gateway = GatewayRouter(context: BasicRequestContext.self)
        Self.register(on: gateway)
        let responder = gateway.buildResponder()
        #expect(
            responder.table.paths == [
                "/", "/user", "/auth/v1/user", "/auth/v1/admin/users", "/files/a.txt", "/fails", "/grouped/token", "/late"
            ])
        #expect(responder.table.lookup("/grouped/token", method: .post)?.path == "/grouped/token")
        #expect(responder.table.lookup("/grouped/token", method: .get) == nil)
        #expect(responder.table.lookup("/grouped/token/", method: .post) == nil)
        #expect(responder.table.lookup("/grouped/tokens", method: .post) == nil)
    }

    @Test("a pattern route reaches a constant path only through its first non-constant component")
    func reach() {
        typealias Builder = ConstantPathTable<Int>.Builder
        func reaches(_ pattern: RouterPath, _ path: RouterPath) -> Bool { Builder.mayReach(pattern, path.components) }
        #expect(reaches("/:id/x", "/user"))
        #expect(reaches("/:id", "/user"))
        #expect(!reaches("/a/:id", "/a"))
        #expect(!reaches("/a/:id", "/b/c"))
        #expect(reaches("/a/:id/c", "/a/b"))
        #expect(reaches("/a/**", "/a/b/c"))
        #expect(!reaches("/a/**", "/a"))
        #expect(reaches("/a/*.json", "/a/b.json"))
        #expect(!reaches("/a/*.json", "/a/b.txt"))
        #expect(reaches("/a/file.*", "/a/file.txt"))
        #expect(reaches("/a/{name}.json", "/a/b.json"))
        #expect(!reaches("/a/{name}.json", "/a/b.txt"))
        #expect(Builder.isConstant(RouterPath.Element.path("user")))
        #expect(!Builder.isConstant(RouterPath.Element.capture("id")))
        #expect(!Builder.isConstant(RouterPath.Element.recursiveWildcard))
    }

    @Test("the gateway's own router answers its hot paths from the table")
    func gatewayTable() throws {
        let configuration = try AuthGateConfiguration.parse(yaml: "", baseDirectory: "", environment: [:])
        let dependencies = try GatewayApplication.Dependencies(
            configuration: configuration, store: MemoryAuthStore(), keyRing: SigningKeyRing.load(configuration.tokens, allowGenerated: true))
        let table = GatewayApplication.buildRouter(dependencies).buildResponder().table
        for (method, path) in [
            (HTTPRequest.Method.get, "/auth/v1/user"), (.put, "/auth/v1/user"), (.post, "/auth/v1/token"), (.post, "/auth/v1/logout"),
            (.get, "/health")
        ] {
            #expect(table.lookup(path, method: method)?.path == path, "\(method) \(path)")
        }
        #expect(!table.paths.contains { $0.contains("{") || $0.contains("*") })
    }
}
