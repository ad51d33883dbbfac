public import AuthGateCore
import HTTPTypes
public import Hummingbird
import Logging
import Synchronization

/// Gives every request an id (the client's `X-Request-Id` when it is sane, a new one otherwise),
/// puts it on every log line of the request and on the response, turns errors into GoTrue's
/// shape, and writes one access-log line per request.
///
/// The access line holds method, path (never the query, which may carry secrets), status and
/// duration; never headers or bodies.
public struct RequestLogMiddleware: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    static let requestIDHeader = HTTPField.Name.constant("X-Request-Id")

    /// Who may name the client's address in `X-Forwarded-For` (for the audit trail).
    private let trustedProxies: [IPNetwork]

    public init(trustedProxies: [IPNetwork] = []) {
        self.trustedProxies = trustedProxies
    }

    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let requestID = Self.acceptableRequestID(request.headers[Self.requestIDHeader]) ?? Self.newRequestID()
        context.requestID = requestID
        // Each change to the logger's metadata copies its handler: one, unless Hummingbird's
        // channel named the request (its id is replaced by ours).
        if context.logger[metadataKey: "hb.request.id"] != nil { context.logger[metadataKey: "hb.request.id"] = nil }
        context.logger[metadataKey: "gw.request_id"] = .string(requestID)
        let start = ContinuousClock.now
        var response: Response
        let (headers, peer, trustedProxies) = (request.headers, context.remoteAddress, trustedProxies)
        let audit = AuditContext(requestID: requestID) {
            let address = ClientAddress.resolve(headers, peer: peer, trustedProxies: trustedProxies).address
            return address == "unknown" ? nil : address
        }
        do {
            response = try await AuditContext.$current.withValue(audit) { try await next(request, context) }
        } catch let error as GoTrueError {
            response = try error.response(from: request, context: context)
        } catch let error as HTTPError {
            response = try GoTrueError(error.status, code: GoTrueError.code(for: error.status), message: error.body ?? error.status.reasonPhrase)
                .response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error", metadata: ["gw.error_type": "\(type(of: error))"])
            response = try GoTrueError(
                .internalServerError, code: "unexpected_failure", message: "Unexpected failure, please check server logs for more information"
            )
            .response(from: request, context: context)
        }
        response.headers[Self.requestIDHeader] = requestID
        let path = request.uri.path
        let route = context.outcome.routeName ?? Self.endpointLabel(path)
        GatewayMetrics.request(route: route, status: response.status.code, duration: ContinuousClock.now - start)
        Self.logAccess(
            context.logger, method: request.method.rawValue, path: path, route: route, status: response.status.code, since: start,
            userID: context.outcome.userID, reason: context.outcome.reason
        )
        return response
    }

    /// AuthGate's own endpoints as metric labels: the path for fixed ones, the family for those with
    /// ids in them, `other` for anything else (404s), so the label's values stay few.
    static func endpointLabel(_ path: String) -> String {
        if path.hasPrefix("/auth/v1/admin/") { return "/auth/v1/admin" }
        return knownEndpoints.contains(path) ? path : "other"
    }

    private static let knownEndpoints: Set<String> = [
        "/auth/v1/token", "/auth/v1/signup", "/auth/v1/user", "/auth/v1/logout", "/auth/v1/settings", "/auth/v1/nonce",
        "/auth/v1/health", "/health", "/readyz", "/metrics", "/.well-known/jwks.json", "/auth/v1/.well-known/jwks.json",
        "/auth/v1/.well-known/openid-configuration", "/auth/v1/apple/notifications"
    ]

    /// The access line: method, path (never the query), route, status and duration, and the user
    /// and refusal reason when known. Never headers, bodies or tokens.
    static func logAccess(
        _ logger: Logger, method: String, path: String, route: String, status: Int, since start: ContinuousClock.Instant, userID: String?,
        reason: String?
    ) {
        guard logger.logLevel <= .info else { return }
        let elapsed = ContinuousClock.now - start
        var metadata: Logger.Metadata = [
            "gw.method": "\(method)",
            "gw.path": "\(path)",
            "gw.route": "\(route)",
            "gw.status": "\(status)",
            "gw.duration_ms": "\(Double(elapsed.components.attoseconds / 1_000_000_000_000 + elapsed.components.seconds * 1_000_000) / 1000)"
        ]
        if let userID { metadata["gw.user_id"] = "\(userID)" }
        if let reason { metadata["gw.outcome"] = "\(reason)" }
        logger.info("request", metadata: metadata)
    }

    /// A client-sent id is kept when it is 1-128 characters of letters, digits, `-`, `_`, `.`.
    static func acceptableRequestID(_ value: String?) -> String? {
        guard let value, (1...128).contains(value.utf8.count),
            value.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95 || $0 == 46 })
        else { return nil }
        return value
    }

    /// Drawn once per process: the first half of every request id, and the key that scrambles the
    /// second half.
    private static let processRandom: (prefix: UInt64, key: UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    private static let issued = Atomic<UInt64>(0)

    /// 32 lower-case hex digits, unique per process without a system call per request: a random
    /// per-process prefix, then a counter scrambled by a bijective mix (so ids do not reveal how
    /// many requests came before).
    static func newRequestID() -> String {
        let count = issued.wrappingAdd(1, ordering: .relaxed).newValue
        var mixed = count ^ processRandom.key
        mixed = (mixed ^ (mixed >> 30)) &* 0xbf58_476d_1ce4_e5b9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94d0_49bb_1331_11eb
        mixed ^= mixed >> 31
        let prefix = processRandom.prefix
        return String(unsafeUninitializedCapacity: 32) { buffer in
            for index in 0..<16 {
                buffer[index] = hexDigits[Int(prefix >> UInt64(60 - 4 * index) & 0xF)]
                buffer[16 + index] = hexDigits[Int(mixed >> UInt64(60 - 4 * index) & 0xF)]
            }
            return 32
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
