// Load generator for bench/exchange/run.sh.
//
//   ExchangeBench prepare <dir> <count>      writes <dir>/apple-jwks.json and <dir>/tokens.txt:
//                                            Apple-shaped RS256 ID tokens, each with a fresh
//                                            nonce (line: "<token> <raw nonce>")
//                                            and <dir>/returning.txt: a second token for each
//                                            subject (a returning user's sign-in)
//   ExchangeBench run <base-url> <tokens> <concurrency> [sessions-out]
//                                            POSTs every token to /auth/v1/token?grant_type=id_token
//                                            over keep-alive connections; prints CSV:
//                                            per_second,p50_ms,p99_ms,errors; with sessions-out,
//                                            writes "<access token> <refresh token>" per success
//   ExchangeBench refresh <base-url> <sessions> <concurrency> <rounds>
//                                            refreshes each session <rounds> times in a chain
//                                            (each answer's refresh token is the next request's)
//   ExchangeBench user <base-url> <sessions> <concurrency> <requests>
//                                            GET /auth/v1/user with the sessions' access tokens
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import _CryptoExtras

func base64URL(_ bytes: some Sequence<UInt8>) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func hexSHA256(_ text: String) -> String {
    SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
}

let audience = "com.example.authgate.bench"
let arguments = CommandLine.arguments

func prepare(directory: String, count: Int) throws {
    let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    let primitives = try key.publicKey.getKeyPrimitives()
    let jwks =
        "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"bench-apple\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"\(base64URL(primitives.modulus))\",\"e\":\"\(base64URL(primitives.publicExponent))\"}]}"
    try jwks.write(toFile: directory + "/apple-jwks.json", atomically: true, encoding: .utf8)
    let header = base64URL(Array("{\"alg\":\"RS256\",\"kid\":\"bench-apple\"}".utf8))
    let now = Int(Date().timeIntervalSince1970)
    let subjects = (0..<count).map { index in
        String(format: "%06d.%@.%04d", index, UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased(), index % 10000)
    }
    func token(_ index: Int, issuedAt: Int) throws -> String {
        let nonce = UUID().uuidString
        let claims =
            "{\"iss\":\"https://appleid.apple.com\",\"aud\":\"\(audience)\",\"exp\":\(now + 86_400),\"iat\":\(issuedAt),\"sub\":\"\(subjects[index])\","
            + "\"nonce\":\"\(hexSHA256(nonce))\",\"c_hash\":\"x\",\"email\":\"\(index)@privaterelay.appleid.com\",\"email_verified\":true,"
            + "\"is_private_email\":true,\"auth_time\":\(issuedAt),\"nonce_supported\":true}"
        let input = header + "." + base64URL(Array(claims.utf8))
        let signature = try key.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation) + " " + nonce
    }
    let first = try (0..<count).map { try token($0, issuedAt: now) }
    try (first.joined(separator: "\n") + "\n").write(toFile: directory + "/tokens.txt", atomically: true, encoding: .utf8)
    let again = try (0..<count).map { try token($0, issuedAt: now - 1) }
    try (again.joined(separator: "\n") + "\n").write(toFile: directory + "/returning.txt", atomically: true, encoding: .utf8)
}

/// One request's outcome: its latency, and whether it got 200 (with the body kept when asked).
struct Outcome {
    var latency: Double
    var ok: Bool
    var body: ByteBuffer?
}

/// Runs `work` for indexes 0..<count on `concurrency` workers over keep-alive connections and
/// prints CSV: per_second,p50_ms,p99_ms,errors.
func load(concurrency: Int, count: Int, _ work: @escaping @Sendable (HTTPClient, Int) async throws -> [Outcome]) async throws {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let next = ManagedCounter()
    let clock = ContinuousClock()
    let start = clock.now
    let results = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                var latencies: [Double] = []
                var errors = 0
                while let index = next.take(below: count) {
                    for outcome in try await work(client, index) {
                        latencies.append(outcome.latency)
                        if !outcome.ok { errors += 1 }
                    }
                }
                return (latencies, errors)
            }
        }
        return try await group.reduce(into: ([Double](), 0)) {
            $0.0 += $1.0; $0.1 += $1.1
        }
    }
    let total = clock.now - start
    let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
    let sorted = results.0.sorted()
    func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
    print(String(format: "%.1f,%.2f,%.2f,%d", Double(sorted.count) / seconds, percentile(0.5), percentile(0.99), results.1))
    try await client.shutdown()
}

/// Sends `request` and measures it.
func timed(_ client: HTTPClient, _ request: HTTPClientRequest, keepBody: Bool = false) async throws -> Outcome {
    let clock = ContinuousClock()
    let sent = clock.now
    let response = try await client.execute(request, timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 1 << 20)
    let elapsed = clock.now - sent
    let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    return Outcome(latency: milliseconds, ok: response.status == .ok, body: keepBody ? body : nil)
}

func post(_ url: String, _ json: String) -> HTTPClientRequest {
    var request = HTTPClientRequest(url: url)
    request.method = .POST
    request.headers.add(name: "Content-Type", value: "application/json;charset=UTF-8")
    request.body = .bytes(ByteBuffer(string: json))
    return request
}

/// A string member of a JSON body (the bench's own answers, so a plain search is enough).
func member(_ name: String, in body: ByteBuffer?) -> String? {
    guard let body else { return nil }
    let text = String(buffer: body)
    guard let start = text.range(of: "\"\(name)\":\"") else { return nil }
    let rest = text[start.upperBound...]
    guard let end = rest.firstIndex(of: "\"") else { return nil }
    return String(rest[..<end])
}

func run(baseURL: String, tokensFile: String, concurrency: Int, sessionsFile: String?) async throws {
    let pairs = try String(contentsOfFile: tokensFile, encoding: .utf8).split(separator: "\n").map { line -> (String, String) in
        let parts = line.split(separator: " ")
        return (String(parts[0]), String(parts[1]))
    }
    let sessions = SessionLines()
    try await load(concurrency: concurrency, count: pairs.count) { client, index in
        let request = post(
            baseURL + "/auth/v1/token?grant_type=id_token",
            "{\"provider\":\"apple\",\"id_token\":\"\(pairs[index].0)\",\"nonce\":\"\(pairs[index].1)\"}")
        let outcome = try await timed(client, request, keepBody: sessionsFile != nil)
        if let access = member("access_token", in: outcome.body), let refresh = member("refresh_token", in: outcome.body) {
            sessions.append("\(access) \(refresh)")
        }
        return [outcome]
    }
    if let sessionsFile { try sessions.write(to: sessionsFile) }
}

func sessionPairs(_ file: String) throws -> [(access: String, refresh: String)] {
    try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map { line in
        let parts = line.split(separator: " ")
        return (String(parts[0]), String(parts[1]))
    }
}

func refresh(baseURL: String, sessionsFile: String, concurrency: Int, rounds: Int) async throws {
    let sessions = try sessionPairs(sessionsFile)
    try await load(concurrency: concurrency, count: sessions.count) { client, index in
        var token = sessions[index].refresh
        var outcomes: [Outcome] = []
        for _ in 0..<rounds {
            let outcome = try await timed(
                client, post(baseURL + "/auth/v1/token?grant_type=refresh_token", "{\"refresh_token\":\"\(token)\"}"), keepBody: true)
            outcomes.append(Outcome(latency: outcome.latency, ok: outcome.ok))
            guard let next = member("refresh_token", in: outcome.body) else { break }
            token = next
        }
        return outcomes
    }
}

func user(baseURL: String, sessionsFile: String, concurrency: Int, requests: Int) async throws {
    let sessions = try sessionPairs(sessionsFile)
    try await load(concurrency: concurrency, count: requests) { client, index in
        var request = HTTPClientRequest(url: baseURL + "/auth/v1/user")
        request.headers.add(name: "Authorization", value: "Bearer \(sessions[index % sessions.count].access)")
        return [try await timed(client, request)]
    }
}

/// Lines collected by concurrent workers.
final class SessionLines: @unchecked Sendable {
    // @unchecked: `lines` is only touched under `lock`.
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        lines.append(line)
    }
    func write(to file: String) throws {
        lock.lock()
        defer { lock.unlock() }
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
    }
}

/// A shared index handed out to workers.
final class ManagedCounter: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0
    func take(below limit: Int) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard value < limit else { return nil }
        value += 1
        return value - 1
    }
}

switch arguments.dropFirst().first {
case "prepare" where arguments.count == 4:
    try prepare(directory: arguments[2], count: Int(arguments[3]) ?? 10_000)
case "run" where arguments.count == 5 || arguments.count == 6:
    try await run(
        baseURL: arguments[2], tokensFile: arguments[3], concurrency: Int(arguments[4]) ?? 64, sessionsFile: arguments.count == 6 ? arguments[5] : nil
    )
case "refresh" where arguments.count == 6:
    try await refresh(baseURL: arguments[2], sessionsFile: arguments[3], concurrency: Int(arguments[4]) ?? 64, rounds: Int(arguments[5]) ?? 5)
case "user" where arguments.count == 6:
    try await user(baseURL: arguments[2], sessionsFile: arguments[3], concurrency: Int(arguments[4]) ?? 64, requests: Int(arguments[5]) ?? 50_000)
default:
    print(
        "usage: ExchangeBench prepare <dir> <count> | run <base-url> <tokens-file> <concurrency> [sessions-out]"
            + " | refresh <base-url> <sessions> <concurrency> <rounds> | user <base-url> <sessions> <concurrency> <requests>")
    exit(2)
}
