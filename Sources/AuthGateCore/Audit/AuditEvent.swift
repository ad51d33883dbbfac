#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// One account-level event in the audit trail: who did what to which user, when, from where.
/// Never a token, code or secret: the fields are ids, fixed action names and short details.
public struct AuditEvent: Sendable, Hashable {
    /// The stream id once stored (`<ms>-<n>` on Redis); nil before.
    public var id: String?
    /// What happened: GoTrue's action names where it has one (`user_signedup`, `login`,
    /// `logout`, `token_revoked`, `user_deleted`, `user_modified`), AuthGate's otherwise
    /// (`identity_linked`, `identity_unlinked`, `user_banned`, `user_unbanned`,
    /// `session_revoked`, `provider_token_revoked`, `provider_revocation_failed`, …).
    public var action: String
    /// Who did it: the user's id, `service_role` (the admin API), `cli:<name>`, `apple`, `system`.
    public var actor: String
    /// The user it was done to.
    public var userID: String?
    public var at: Date
    /// The client's address (through `server.trusted_proxies`), for requests.
    public var ip: String?
    /// The request's `X-Request-Id`, for requests.
    public var requestID: String?
    /// Bounded detail: a provider name, a session id, a reason code.
    public var detail: [String: String]

    public init(
        action: String, actor: String, userID: String?, at: Date, ip: String? = nil, requestID: String? = nil, detail: [String: String] = [:]
    ) {
        self.action = action
        self.actor = actor
        self.userID = userID
        self.at = at
        self.ip = ip
        self.requestID = requestID
        self.detail = detail
    }

    /// An event for `action` on `userID` now, with the address and request id of the task's
    /// ``AuditContext`` and its actor (or `actor`, for a user acting before it is authenticated:
    /// signing in; `system` when neither says).
    public static func now(_ action: String, userID: String?, actor: String? = nil, detail: [String: String] = [:], at: Date = Date())
        -> AuditEvent
    {
        let context = AuditContext.current
        return AuditEvent(
            action: action, actor: actor ?? context.actor ?? "system", userID: userID, at: at, ip: context.ip, requestID: context.requestID,
            detail: detail)
    }

    /// The stored form (compact JSON; `id` is the stream's): the bytes ``JSONValue`` writes for the
    /// same members (names in sorted order), written without building a dictionary (a sign-in
    /// records one event).
    public func encoded() -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 160)
        writer.string("action", action)
        writer.string("actor", actor)
        writer.integer("at", at.unixMilliseconds)
        if !detail.isEmpty {
            writer.object("detail") { nested in
                for (name, value) in detail.sorted(by: { $0.key < $1.key }) { nested.string(named: name, value) }
            }
        }
        writer.string("ip", ip)
        writer.string("request_id", requestID)
        writer.string("user_id", userID)
        return writer.finished()
    }

    /// Reads a stored event; nil for one that does not parse (a trail is read, never trusted to
    /// be well-formed).
    public static func decode(_ bytes: some Collection<UInt8>, id: String?) -> AuditEvent? {
        guard let members = (try? JSONValue.parse(bytes))?.objectValue, let action = members["action"]?.stringValue,
            let actor = members["actor"]?.stringValue, let milliseconds = members["at"]?.integerValue,
            (0...253_402_300_799_000).contains(milliseconds)
        else { return nil }
        var event = AuditEvent(
            action: action, actor: actor, userID: members["user_id"]?.stringValue, at: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
            ip: members["ip"]?.stringValue, requestID: members["request_id"]?.stringValue,
            detail: (members["detail"]?.objectValue ?? [:]).compactMapValues(\.stringValue))
        event.id = id
        return event
    }
}

/// Who is acting in the current task, for the audit trail: set by the HTTP layer per request
/// (client address, request id; the user or `service_role` once authenticated) and by the CLI.
public struct AuditContext: Sendable {
    public var actor: String?
    public var requestID: String?
    /// Finds the client's address when an event is recorded (most requests record none, so the
    /// request path does not pay for it).
    private let address: @Sendable () -> String?

    /// The client's address, for the event being recorded.
    public var ip: String? { address() }

    public init(actor: String? = nil, ip: String? = nil, requestID: String? = nil) {
        self.init(actor: actor, requestID: requestID, address: { ip })
    }

    /// With the client's address found only when an event asks for it.
    public init(actor: String? = nil, requestID: String?, address: @escaping @Sendable () -> String?) {
        self.actor = actor
        self.requestID = requestID
        self.address = address
    }

    @TaskLocal public static var current = AuditContext()
}
