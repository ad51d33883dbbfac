import AuthGateCore
import AuthGateTestSupport
import Foundation
import Testing

/// A separate `authgate serve` with public, anonymous-allowed and protected routes, each to its
/// own upstream: nginx answering at once for `/early/` and `/early-anon/`, and recording
/// upstreams (``RecordingUpstream``) for `/public/`, `/api` (anonymous allowed, prefix stripped),
/// `/members/` (no anonymous users) and `/admin/` (role `service_role`).
final class EdgeRig {
    let files: GatewayFiles
    let nginx: NginxServer
    let open: RecordingUpstream
    let api: RecordingUpstream
    let members: RecordingUpstream
    let admin: RecordingUpstream
    let server: AuthGateServer

    /// - Parameter logLevel: the gateway's `logging.level` (its log is in ``AuthGateServer/log``).
    init(extraServer: String = "", logLevel: String = "warning") async throws {
        files = try GatewayFiles("edge-safety")
        nginx = try await NginxServer.start(locations: #"location / { return 200 "ok\n"; }"#)
        open = try await RecordingUpstream.start()
        api = try await RecordingUpstream.start()
        members = try await RecordingUpstream.start()
        admin = try await RecordingUpstream.start()
        try files.writeConfig(
            """
            server: { host: 127.0.0.1\(extraServer) }
            providers: { anonymous: { enabled: true } }
            rate_limits: { token: off, signup: off, nonce: off }
            routes:
              - { name: early, path_prefix: /early/, upstreams: [\(nginx.url)], auth: public }
              - { name: early_anonymous, path_prefix: /early-anon/, upstreams: [\(nginx.url)], auth: required, allow_anonymous: true }
              - { name: open, path_prefix: /public/, upstreams: [\(open.url)], auth: public }
              - { name: api, path_prefix: /api, upstreams: [\(api.url)], auth: required, allow_anonymous: true, strip_prefix: true }
              - { name: members, path_prefix: /members/, upstreams: [\(members.url)], auth: required }
              - { name: admin, path_prefix: /admin/, upstreams: [\(admin.url)], auth: required, allow_anonymous: true, require_claims: { role: service_role } }
            logging: { level: \(logLevel) }
            """)
        server = try await AuthGateServer.start(arguments: ["--config", files.config.path])
    }

    func stop() async -> Int32 {
        let status = await server.stop()
        for upstream in [open, api, members, admin] { await upstream.stop() }
        nginx.stop()
        files.remove()
        return status
    }

    /// An anonymous user's access token.
    func anonymousToken() async throws -> String {
        let (data, _) = try await HTTP.send(HTTP.loopbackURL(port: server.port, path: "/auth/v1/signup"), method: "POST", json: "{}")
        return try #require(JSONValue.parse(Array(data)).objectValue?["access_token"]?.stringValue)
    }

    /// Sends raw bytes on a new connection and reads until the gateway closes it.
    func exchange(_ request: String) async throws -> (status: String, text: String, closed: Bool) {
        let connection = try RawConnection(port: server.port)
        await connection.send(request)
        let (bytes, closed) = await connection.receiveUntilClosed()
        let text = String(decoding: bytes, as: UTF8.self)
        return (String(text.split(separator: "\r\n", maxSplits: 1).first ?? ""), text, closed)
    }
}
