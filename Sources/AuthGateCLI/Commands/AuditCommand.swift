import ArgumentParser
import AuthGateCore
import AuthGateHTTP
import Foundation
import RedisBridge

/// `authgate audit [--user U] [--since T] [--limit N] [--follow] [--json]`: the audit trail the
/// gateways write (sign-ups, sign-ins, links, unlinks, refresh reuse, logouts, deletions, bans,
/// admin and CLI actions, provider revocations), newest first; with `--follow`, new events as
/// they arrive.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "audit", abstract: "Show the audit trail (never a token or secret).")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only this user's events (a user id).")
    var user: String?
    @Option(
        help:
            "Only events at or after this time: Unix seconds, an RFC 3339 time (2026-11-24T10:00:00Z), a date (2026-11-24, UTC), or a duration ago such as 15m, 2h, 7d."
    )
    var since: String?
    @Option(help: "How many events (1-1000).")
    var limit = 50
    @Flag(help: "Keep printing new events as they arrive (stop with Ctrl-C).")
    var follow = false

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1 to 1000") }
        if let user, AuditQuery.userID(user) == nil { throw ValidationError("--user must be a user id (a UUID)") }
        if let since, Self.parseSince(since, now: Date()) == nil {
            throw ValidationError(
                "--since must be Unix seconds, an RFC 3339 time with its offset, a date (YYYY-MM-DD) or a duration such as 15m, 2h, 7d")
        }
    }

    /// `--since`: Unix seconds; an RFC 3339 time with its offset or a date (``RFC3339Time``); or
    /// a duration ago (`90s`, `15m`, `2h`, `7d`).
    static func parseSince(_ text: String, now: Date) -> Date? {
        if let date = AuditQuery.since(unixSeconds: text) { return date }
        if let date = RFC3339Time.parse(text) { return date }
        let amountText = text.dropLast()
        guard let unit = text.last, let amount = DecimalInteger.parse(amountText, in: 0...100_000) else { return nil }
        let scale: Int
        switch unit {
        case "s": scale = 1
        case "m": scale = 60
        case "h": scale = 3600
        case "d": scale = 86_400
        default: return nil
        }
        return now.addingTimeInterval(-Double(amount * scale))
    }

    func run() async throws {
        try await AdminStore.run(options) { opened in
            let query = AuditQuery(userID: user.flatMap(AuditQuery.userID), since: since.flatMap { Self.parseSince($0, now: Date()) }, limit: limit)
            // Following with nothing to show yet, the follower starts after the trail's newest
            // event, asked before the first read (in Redis's own ids): an event written between the
            // two is then either shown or followed. A start taken from this host's clock after the
            // read skipped an event written in between, and a minute of them on a host whose
            // clock ran a minute ahead of Redis's.
            let newest = follow ? try await opened.store.auditEvents(AuditQuery(limit: 1)).first?.id : nil
            let events = try await opened.store.auditEvents(query)
            guard follow else {
                print(events)
                return
            }
            // Following, lines come oldest first, as a log does, and each batch is flushed as it
            // is printed: into a pipe, standard output is otherwise written 4 KiB at a time, and
            // what a stopped follower had not written yet was lost.
            print(events.reversed())
            fflush(nil)
            let start = events.first?.id ?? newest
            var follower = AuditFollower(query: query, from: start ?? "0-0", isEvent: start != nil)
            while !Task.isCancelled {
                if follower.delay > .zero { try await Task.sleep(for: follower.delay) }
                let wasFailing = follower.failures > 0
                do {
                    let batch = try await follower.next(from: opened.store)
                    if wasFailing { printError("audit: the store answers again; following on after event \(follower.position)") }
                    if let dropped = follower.droppedAfter {
                        printError(
                            "audit: event \(dropped) left the trail (it keeps about the newest 100,000) before the events after it were read: some may be missing; following on after event \(follower.position)"
                        )
                    }
                    print(batch, header: false)
                    fflush(nil)
                } catch let error as AuthGateError where error.code == .storeUnavailable {
                    // A restart or a failover: asked again from the same position until it answers.
                    if !wasFailing { printError("audit: the store is unavailable (\(error.message)); retrying after event \(follower.position)") }
                }
            }
        }
    }

    /// Prints events: a table with a header, or (following) one tab-separated line each.
    private func print(_ events: [AuditEvent], header: Bool = true) {
        if output.json {
            for event in events { Output.json(.object(AdminAuditController.entry(event))) }
            return
        }
        let rows = events.map(Self.row)
        if header {
            Output.table(["TIME", "ACTION", "ACTOR", "USER", "IP", "REQUEST", "DETAIL"], rows)
        } else {
            for row in rows { Swift.print(row.joined(separator: "\t")) }
        }
    }

    private static func row(_ event: AuditEvent) -> [String] {
        [
            Output.date(event.at), event.action, event.actor, event.userID ?? "-", event.ip ?? "-", event.requestID ?? "-",
            event.detail.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        ]
    }
}
