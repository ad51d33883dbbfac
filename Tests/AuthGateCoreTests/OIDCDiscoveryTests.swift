import AuthGateTestSupport
import Synchronization
import Testing

@testable import AuthGateCore

/// The discovery documents (the browser flow's endpoints, the key sets' `jwks_uri`), against a
/// scripted fetcher and a clock the tests move.
@Suite("OIDC discovery", .timeLimit(.minutes(1)))
struct OIDCDiscoveryTests {
    static let issuer = "https://id.example.com"

    /// Answers discovery documents from a script (one entry per fetch; the last repeats), counting
    /// fetches; when `held`, each fetch waits until ``open()``.
    final class ScriptedFetcher: JWKSFetching {
        enum Answer {
            case document(String, maxAge: Duration?)
            case failure
        }

        private struct State {
            var answers: [Answer]
            var fetches: [String] = []
            var held: Bool
            var waiting: [CheckedContinuation<Void, Never>] = []
        }

        private let state: Mutex<State>

        init(_ answers: [Answer], held: Bool = false) {
            state = Mutex(State(answers: answers, held: held))
        }

        var fetches: [String] { state.withLock { $0.fetches } }

        /// Lets every held fetch, and every later one, go on.
        func open() {
            let waiting = state.withLock { state in
                state.held = false
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func fetch(_ url: String) async throws -> FetchedDocument {
            let answer = state.withLock { state -> Answer in
                state.fetches.append(url)
                return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
            }
            await withCheckedContinuation { continuation in
                let go = state.withLock { state in
                    if state.held { state.waiting.append(continuation) }
                    return !state.held
                }
                if go { continuation.resume() }
            }
            switch answer {
            case .document(let text, let maxAge): return FetchedDocument(body: Array(text.utf8), maxAge: maxAge)
            case .failure: throw AuthGateError(.keysUnavailable, "GET \(url) answered 503")
            }
        }
    }

    static func document(
        issuer: String = issuer, authorization: String? = "https://id.example.com/authorize", token: String? = "https://id.example.com/token",
        keys: String? = "https://id.example.com/keys"
    )
        -> String
    {
        var fields = ["\"issuer\":\"\(issuer)\""]
        if let keys { fields.append("\"jwks_uri\":\"\(keys)\"") }
        if let authorization { fields.append("\"authorization_endpoint\":\"\(authorization)\"") }
        if let token { fields.append("\"token_endpoint\":\"\(token)\"") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @Test("the endpoints are read from <issuer>/.well-known/openid-configuration once, and kept for the document's max-age (5 min to 24 h)")
    func cachedForItsLifetime() async throws {
        // The document's URL has one slash before .well-known; an issuer written with a trailing
        // slash is another issuer than the one the document names, byte for byte.
        let slashed = ScriptedFetcher([.document(Self.document(), maxAge: nil)])
        await #expect(throws: AuthGateError.self) { _ = try await OIDCDiscovery(fetcher: slashed).endpoints(issuer: Self.issuer + "/") }
        #expect(slashed.fetches == ["https://id.example.com/.well-known/openid-configuration"])

        let clock = ManualClock()
        let fresh = ScriptedFetcher([
            .document(Self.document(), maxAge: .seconds(600)),
            .document(Self.document(authorization: "https://id.example.com/v2/authorize"), maxAge: .seconds(1))
        ])
        let kept = OIDCDiscovery(fetcher: fresh, now: { clock.now })
        for _ in 0..<5 { #expect(try await kept.endpoints(issuer: Self.issuer).authorization == "https://id.example.com/authorize") }
        #expect(fresh.fetches.count == 1)
        clock.advance(.seconds(599))
        #expect(try await kept.endpoints(issuer: Self.issuer).authorization == "https://id.example.com/authorize")
        #expect(fresh.fetches.count == 1)
        clock.advance(.seconds(2))
        #expect(try await kept.endpoints(issuer: Self.issuer).authorization == "https://id.example.com/v2/authorize")
        #expect(fresh.fetches.count == 2)
        // A max-age of 1 s is held to the 5-minute minimum.
        clock.advance(.seconds(299))
        _ = try await kept.endpoints(issuer: Self.issuer)
        #expect(fresh.fetches.count == 2)
        clock.advance(.seconds(2))
        _ = try await kept.endpoints(issuer: Self.issuer)
        #expect(fresh.fetches.count == 3)
    }

    @Test("a document that names another issuer, lacks an endpoint, or gives http endpoints for an https issuer is refused")
    func strictDocument() async throws {
        let refused = [
            Self.document(issuer: "https://evil.example"), Self.document(issuer: "https://ID.example.com"), Self.document(token: nil),
            Self.document(authorization: nil), Self.document(token: "http://id.example.com/token"),
            Self.document(authorization: "https://user:pw@id.example.com/authorize"), Self.document(authorization: "javascript:alert(1)"),
            "[]", "not json"
        ]
        for text in refused {
            let discovery = OIDCDiscovery(fetcher: ScriptedFetcher([.document(text, maxAge: nil)]))
            do {
                _ = try await discovery.endpoints(issuer: Self.issuer)
                Issue.record("accepted \(text)")
            } catch let error as AuthGateError {
                #expect(error.code == .providerUnavailable, "\(text)")
            }
        }
        // The issuer is compared byte for byte: Swift's `==` takes the Kelvin sign (U+212A) for a K.
        let kelvin = OIDCDiscovery(
            fetcher: ScriptedFetcher([.document(Self.document(issuer: "https://id.example.com/\u{212A}"), maxAge: nil)]))
        #expect("https://id.example.com/\u{212A}" == "https://id.example.com/K")
        await #expect(throws: AuthGateError.self) { _ = try await kelvin.endpoints(issuer: "https://id.example.com/K") }
        // An http issuer (a local provider) may name http endpoints.
        let local = OIDCDiscovery(
            fetcher: ScriptedFetcher([
                .document(
                    Self.document(issuer: "http://127.0.0.1:9", authorization: "http://127.0.0.1:9/a", token: "http://127.0.0.1:9/t"), maxAge: nil)
            ]))
        #expect(
            try await local.endpoints(issuer: "http://127.0.0.1:9") == .init(authorization: "http://127.0.0.1:9/a", token: "http://127.0.0.1:9/t"))
    }

    @Test("while the provider is down: the last endpoints are served; with none, each lookup fails without a fetch until the backoff has passed")
    func failures() async throws {
        let clock = ManualClock()
        let down = ScriptedFetcher([.failure])
        let discovery = OIDCDiscovery(fetcher: down, now: { clock.now })
        for _ in 0..<50 {
            await #expect(throws: AuthGateError.self) { _ = try await discovery.endpoints(issuer: Self.issuer) }
        }
        #expect(down.fetches.count == 1)
        clock.advance(.seconds(3))
        await #expect(throws: AuthGateError.self) { _ = try await discovery.endpoints(issuer: Self.issuer) }
        #expect(down.fetches.count == 2)
        // The backoff doubles: 4 s after the second failure.
        clock.advance(.seconds(3))
        await #expect(throws: AuthGateError.self) { _ = try await discovery.endpoints(issuer: Self.issuer) }
        #expect(down.fetches.count == 2)

        let flaky = ScriptedFetcher([.document(Self.document(), maxAge: .seconds(300)), .failure])
        let kept = OIDCDiscovery(fetcher: flaky, now: { clock.now })
        let good = try await kept.endpoints(issuer: Self.issuer)
        clock.advance(.seconds(301))
        #expect(try await kept.endpoints(issuer: Self.issuer) == good)
        #expect(try await kept.endpoints(issuer: Self.issuer) == good)
        #expect(flaky.fetches.count == 2)
    }

    @Test("callers that arrive during a fetch wait for it: one fetch for all")
    func singleFlight() async throws {
        let fetcher = ScriptedFetcher([.document(Self.document(), maxAge: nil)], held: true)
        let discovery = OIDCDiscovery(fetcher: fetcher)
        try await withThrowingTaskGroup(of: OIDCDiscovery.Endpoints.self) { group in
            for _ in 0..<20 { group.addTask { try await discovery.endpoints(issuer: Self.issuer) } }
            // Fetches are held until each of the twenty callers is in: fetching, or waiting for a
            // fetch already under way (one fetching and nineteen waiting, when single-flight).
            var notAllIn: (any Error)?
            do {
                try await waitUntil("all twenty in") { await discovery.callersWaitingForFetch + fetcher.fetches.count >= 20 }
            } catch {
                notAllIn = error
            }
            fetcher.open()  // also when they never were all in: the held fetches must end for the group to.
            if let notAllIn { throw notAllIn }
            var answers = 0
            for try await endpoints in group {
                #expect(endpoints.token == "https://id.example.com/token")
                answers += 1
            }
            #expect(answers == 20)
        }
        #expect(fetcher.fetches.count == 1)
    }

    @Test("the key sets and the browser flow read one fetched document; each use checks only its own fields, with its own error code")
    func oneDocumentForBothUses() async throws {
        let clock = ManualClock()
        let fetcher = ScriptedFetcher([.document(Self.document(), maxAge: .seconds(600))])
        let discovery = OIDCDiscovery(fetcher: fetcher, now: { clock.now })
        #expect(try await discovery.keySetURL(issuer: Self.issuer) == "https://id.example.com/keys")
        #expect(try await discovery.endpoints(issuer: Self.issuer).token == "https://id.example.com/token")
        #expect(try await discovery.keySetURL(issuer: Self.issuer) == "https://id.example.com/keys")
        #expect(fetcher.fetches.count == 1)

        // A provider used only for id_token sign-in may publish no browser endpoints: its keys are
        // still found, and the browser flow is refused with its own code.
        let keysOnly = OIDCDiscovery(fetcher: ScriptedFetcher([.document(Self.document(authorization: nil, token: nil), maxAge: nil)]))
        #expect(try await keysOnly.keySetURL(issuer: Self.issuer) == "https://id.example.com/keys")
        await #expect { _ = try await keysOnly.endpoints(issuer: Self.issuer) } throws: { ($0 as? AuthGateError)?.code == .providerUnavailable }

        // Unreadable, or without a usable jwks_uri: a key set's error is keys_unavailable.
        let unusable = [
            Self.document(keys: nil), Self.document(keys: "http://id.example.com/keys"), Self.document(issuer: "https://evil.example"), "not json"
        ]
        for text in unusable {
            let discovery = OIDCDiscovery(fetcher: ScriptedFetcher([.document(text, maxAge: nil)]))
            await #expect { _ = try await discovery.keySetURL(issuer: Self.issuer) } throws: { ($0 as? AuthGateError)?.code == .keysUnavailable }
        }
        let down = OIDCDiscovery(fetcher: ScriptedFetcher([.failure]))
        await #expect { _ = try await down.keySetURL(issuer: Self.issuer) } throws: { ($0 as? AuthGateError)?.code == .keysUnavailable }
    }
}
