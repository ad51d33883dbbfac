// Load generator for bench/exchange/run.sh.
//
//   ExchangeBench prepare <dir> <count>      writes <dir>/apple-jwks.json and <dir>/tokens.txt:
//                                            Apple-shaped RS256 ID tokens, each with a fresh
//                                            nonce (line: "<token> <raw nonce>")
//   ExchangeBench run <base-url> <tokens> <concurrency>
//                                            POSTs every token to /auth/v1/token?grant_type=id_token
//                                            over keep-alive connections; prints CSV:
//                                            exchanges_per_second,p50_ms,p99_ms,errors
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
    let lines = try (0..<count).map { index -> String in
        let nonce = UUID().uuidString
        let subject = String(format: "%06d.%@.%04d", index, UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased(), index % 10000)
        let claims =
            "{\"iss\":\"https://appleid.apple.com\",\"aud\":\"\(audience)\",\"exp\":\(now + 86_400),\"iat\":\(now),\"sub\":\"\(subject)\","
            + "\"nonce\":\"\(hexSHA256(nonce))\",\"c_hash\":\"x\",\"email\":\"\(index)@privaterelay.appleid.com\",\"email_verified\":true,"
            + "\"is_private_email\":true,\"auth_time\":\(now),\"nonce_supported\":true}"
        let input = header + "." + base64URL(Array(claims.utf8))
        let signature = try key.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation) + " " + nonce
    }
    try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/tokens.txt", atomically: true, encoding: .utf8)
}

func run(baseURL: String, tokensFile: String, concurrency: Int) async throws {
    let pairs = try String(contentsOfFile: tokensFile, encoding: .utf8).split(separator: "\n").map { line -> (String, String) in
        let parts = line.split(separator: " ")
        return (String(parts[0]), String(parts[1]))
    }
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
                while let index = next.take(below: pairs.count) {
                    var request = HTTPClientRequest(url: baseURL + "/auth/v1/token?grant_type=id_token")
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json;charset=UTF-8")
                    request.body = .bytes(
                        ByteBuffer(string: "{\"provider\":\"apple\",\"id_token\":\"\(pairs[index].0)\",\"nonce\":\"\(pairs[index].1)\"}"))
                    let sent = clock.now
                    let response = try await client.execute(request, timeout: .seconds(30))
                    _ = try await response.body.collect(upTo: 1 << 20)
                    let elapsed = clock.now - sent
                    latencies.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                    if response.status != .ok { errors += 1 }
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
    print(String(format: "%.1f,%.2f,%.2f,%d", Double(pairs.count) / seconds, percentile(0.5), percentile(0.99), results.1))
    try await client.shutdown()
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
case "run" where arguments.count == 5:
    try await run(baseURL: arguments[2], tokensFile: arguments[3], concurrency: Int(arguments[4]) ?? 64)
default:
    print("usage: ExchangeBench prepare <dir> <count> | run <base-url> <tokens-file> <concurrency>")
    exit(2)
}
