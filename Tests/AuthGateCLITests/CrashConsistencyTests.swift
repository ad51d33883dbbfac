import AuthGateCore
import AuthGateTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 14: a gateway killed with SIGKILL at any instant leaves the store consistent. Sign-ins,
/// anonymous upgrades, refreshes and deletions run against `authgate serve` on Redis while it is
/// killed at random moments and restarted; afterwards `authgate doctor` finds nothing and every
/// identity signs in as the user it belonged to.
///
/// `AUTHGATE_CRASH_KILLS` sets the number of kills (20 by default, so `make test` stays short;
/// the README records a 200-kill run) and `AUTHGATE_CRASH_SEED` the random seed (printed).
@Suite("Crash consistency", .serialized, .timeLimit(.minutes(10)))
struct CrashConsistencyTests {
    /// What the test knows about each subject: the user it signs in as, unless a deletion of that
    /// user may have landed (the kill can come before or after it), and live refresh tokens.
    final class Ledger: Sendable {
        private struct State {
            var owner: [String: String] = [:]
            var uncertain: Set<String> = []
            /// Users a deletion was sent for: ids are never reused, so a subject answered with one
            /// of them may be free the next moment.
            var deleted: Set<String> = []
            var refreshTokens: [String] = []
            var mismatches: [String] = []
        }
        private let state = Mutex(State())

        func signedIn(_ subject: String, as userID: String) {
            state.withLock { state in
                if let known = state.owner[subject], known != userID, !state.uncertain.contains(subject) {
                    state.mismatches.append("\(subject) signed in as \(userID), was \(known)")
                }
                state.owner[subject] = userID
                if state.deleted.contains(userID) { state.uncertain.insert(subject) } else { state.uncertain.remove(subject) }
            }
        }

        /// A deletion of `userID` was sent: its subjects may or may not belong to it any more.
        func deleting(_ userID: String) {
            state.withLock { state in
                state.deleted.insert(userID)
                for (subject, owner) in state.owner where owner == userID { state.uncertain.insert(subject) }
            }
        }

        func issued(_ refreshToken: String) { state.withLock { $0.refreshTokens.append(refreshToken) } }

        func takeRefreshToken() -> String? {
            state.withLock { $0.refreshTokens.isEmpty ? nil : $0.refreshTokens.removeLast() }
        }

        func owner(_ subject: String) -> (id: String?, certain: Bool) {
            state.withLock { ($0.owner[subject], !$0.uncertain.contains(subject)) }
        }

        var mismatches: [String] { state.withLock { $0.mismatches } }
        var knownUsers: Int { state.withLock { Set($0.owner.values).count } }
    }

    @Test("SIGKILL at random moments during sign-ins, upgrades, refreshes and deletions: doctor finds nothing, every identity keeps its user")
    func killedAtRandom() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["AUTHGATE_CRASH_KILLS"] ?? "") ?? 20
        let seed = UInt64(ProcessInfo.processInfo.environment["AUTHGATE_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        print("crash consistency: \(kills) kills, seed \(seed) (AUTHGATE_CRASH_SEED=\(seed) AUTHGATE_CRASH_KILLS=\(kills) to repeat)")
        var random = SeededGenerator(seed: seed)

        let files = try GatewayFiles("crash")
        let provider = try await FakeProvider.start(keys: [FakeProvider.sharedKeys[0]])
        defer { files.remove() }
        try files.writeConfig(
            """
            server: { host: 127.0.0.1 }
            store: { kind: redis, redis: { url: "\(try await SharedRedis.url())", key_prefix: "crash-\(UInt32.random(in: 0...UInt32.max)):" } }
            tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
            providers:
              anonymous: { enabled: true }
              oidc: [ { name: fake, issuer: "\(provider.issuer)", audiences: [app], jwks_url: "\(provider.jwksURL)" } ]
            rate_limits: { token: off, signup: off, nonce: off }
            logging: { level: error }
            """)
        let serviceRole = try await AuthGateBinary.run(["tokens", "service-role", "--config", files.config.path]).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let ledger = Ledger()
        let subjects = (0..<24).map { "crash-\($0)" }
        var completed = 0

        for round in 0..<kills {
            let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
            let client = Client(base: server.baseURL, provider: provider, serviceRole: serviceRole)
            let operations = (0..<12).map { _ in (Int.random(in: 0..<5, using: &random), subjects.randomElement(using: &random) ?? "crash-0") }
            let delay = Duration.milliseconds(Int.random(in: 0...40, using: &random))
            let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (kind, subject) in operations {
                    group.addTask { (try? await client.perform(kind, subject: subject, ledger: ledger)) != nil }
                }
                group.addTask {
                    try await Task.sleep(for: delay)
                    _ = await server.stop(signal: SIGKILL)
                    return false
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            completed += finished
            #expect(!server.isRunning, "round \(round): the gateway was killed")
        }

        // After the last kill: the store is consistent and every identity keeps its user.
        let doctor = try await AuthGateBinary.run(["doctor", "--config", files.config.path])
        #expect(doctor.status == 0, "authgate doctor after \(kills) kills:\n\(doctor.standardOutput)\(doctor.standardError)")
        #expect(doctor.standardOutput.contains("store consistent"), "\(doctor.standardOutput)")

        let server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
        let client = Client(base: server.baseURL, provider: provider, serviceRole: serviceRole)
        for subject in subjects {
            let (known, certain) = ledger.owner(subject)
            let first = try await client.signIn(subject)
            if let known, certain {
                #expect(first.userID == known, "\(subject) belonged to \(known), signs in as \(first.userID)")
            }
            #expect(try await client.signIn(subject).userID == first.userID, "\(subject) signs in as one user")
        }
        #expect(ledger.mismatches.isEmpty, "\(ledger.mismatches)")
        #expect(completed > 0 && ledger.knownUsers > 0, "operations completed between kills: \(completed)")
        print("crash consistency: \(kills) kills, \(completed) operations completed between them, \(ledger.knownUsers) users known")
        _ = await server.stop()
        await provider.stop()
    }

    /// The HTTP calls the test makes, as a client would.
    struct Client: Sendable {
        let base: URL
        let provider: FakeProvider
        let serviceRole: String

        /// One operation: 0-1 sign in, 2 anonymous sign-up upgraded to `subject`, 3 refresh,
        /// 4 delete the subject's user (hard or soft).
        func perform(_ kind: Int, subject: String, ledger: Ledger) async throws {
            switch kind {
            case 0, 1:
                let session = try await signIn(subject)
                ledger.signedIn(subject, as: session.userID)
                ledger.issued(session.refreshToken)
            case 2:
                let anonymous = try await call("auth/v1/signup", json: "{}")
                let token = try Self.field(anonymous, "access_token")
                let linked = try await call("auth/v1/token", query: "id_token", json: idTokenBody(subject), bearer: token, link: true)
                let userID = try Self.userID(linked)
                ledger.signedIn(subject, as: userID)
            case 3:
                guard let refreshToken = ledger.takeRefreshToken() else { return }
                let refreshed = try await call("auth/v1/token", query: "refresh_token", json: "{\"refresh_token\":\"\(refreshToken)\"}")
                ledger.issued(try Self.field(refreshed, "refresh_token"))
            default:
                guard case (let userID?, _) = ledger.owner(subject) else { return }
                ledger.deleting(userID)
                var request = URLRequest(url: base.appendingPathComponent("auth/v1/admin/users/\(userID)"))
                request.httpMethod = "DELETE"
                request.setValue("Bearer \(serviceRole)", forHTTPHeaderField: "Authorization")
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data((subject.hasSuffix("3") ? "{\"should_soft_delete\":true}" : "{}").utf8)
                _ = try await URLSession.shared.data(for: request)
            }
        }

        func signIn(_ subject: String) async throws -> (userID: String, refreshToken: String) {
            let body = try await call("auth/v1/token", query: "id_token", json: idTokenBody(subject))
            return (try Self.userID(body), try Self.field(body, "refresh_token"))
        }

        private func idTokenBody(_ subject: String) -> String {
            let now = Int64(Date().timeIntervalSince1970)
            let token = FakeProvider.token(
                claims: [
                    "iss": .string(provider.issuer), "aud": "app", "sub": .string(subject), "iat": .integer(now), "exp": .integer(now + 600),
                    "jti": .string(UUID().uuidString)
                ],
                key: FakeProvider.sharedKeys[0])
            return "{\"provider\":\"fake\",\"id_token\":\"\(token)\"}"
        }

        private func call(_ path: String, query: String? = nil, json: String, bearer: String? = nil, link: Bool = false) async throws
            -> [String: JSONValue]
        {
            var url = base.appendingPathComponent(path)
            if let query { url = url.appending(queryItems: [URLQueryItem(name: "grant_type", value: query)]) }
            var body = json
            if link { body = String(json.dropLast()) + ",\"link_identity\":true}" }
            let (data, response) = try await HTTP.send(
                url, method: "POST", headers: bearer.map { ["Authorization": "Bearer \($0)"] } ?? [:], json: body)
            guard response.statusCode == 200, let object = try JSONValue.parse(Array(data)).objectValue else {
                throw TestSupportError("\(path) answered \(response.statusCode)")
            }
            return object
        }

        static func field(_ object: [String: JSONValue], _ name: String) throws -> String {
            guard let value = object[name]?.stringValue else { throw TestSupportError("no \(name) in the answer") }
            return value
        }

        static func userID(_ object: [String: JSONValue]) throws -> String {
            guard let id = object["user"]?.objectValue?["id"]?.stringValue else { throw TestSupportError("no user.id in the answer") }
            return id
        }
    }
}
