public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `GET /health` and `GET /auth/v1/health` in GoTrue's shape (liveness: the process answers),
/// and `GET /readyz` (readiness: 200 `ready`, or 200 `degraded` when only a provider's key set
/// is missing or stale, else 503 `not_ready`; every check's detail is listed).
public struct HealthController: Sendable {
    /// The version reported by `/health`.
    public let version: String
    let probe: ReadinessProbe

    public init(version: String, probe: ReadinessProbe) {
        self.version = version
        self.probe = probe
    }

    /// Registers the routes.
    public func register(on router: some RouterMethods<AuthGateRequestContext>) {
        router.get("/health") { _, _ in try health() }
        router.get("/auth/v1/health") { _, _ in try health() }
        router.get("/readyz") { _, _ in try await readiness() }
    }

    private struct Health: Encodable {
        let version: String
        let name: String
        let description: String
    }

    private func health() throws -> Response {
        try json(.ok, Health(version: version, name: "GoTrue", description: "GoTrue is a user registration and authentication API"))
    }

    private struct Readiness: Encodable {
        let status: String
        let checks: [String: String]
    }

    private func readiness() async throws -> Response {
        let checks = await probe.run()
        let ready = checks.allSatisfy { $0.isReady || !$0.isCritical }
        let degraded = checks.contains { !$0.isReady }
        var details: [String: String] = [:]
        for check in checks { details[check.name] = check.detail }
        let status = ready ? (degraded ? "degraded" : "ready") : "not_ready"
        return try json(ready ? .ok : .serviceUnavailable, Readiness(status: status, checks: details))
    }

    private func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = try encoder.encode(value)
        return Response(
            status: status,
            headers: RequestSupport.jsonNoStoreFields,
            body: .init(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
