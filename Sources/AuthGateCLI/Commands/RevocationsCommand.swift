import ArgumentParser
import AuthGateCore
import AuthGateHTTP
import Foundation

/// `authgate revocations …`: the provider token revocation outbox (Apple's and Google's refresh
/// tokens of identities that left), which every running gateway works.
struct RevocationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revocations",
        abstract: "Show provider token revocations waiting or given up.",
        subcommands: [ListRevocationsCommand.self]
    )
}

/// `authgate revocations list [--failed]`.
struct ListRevocationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List pending and failed provider token revocations (never the tokens).")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "Only the revocations given up on.")
    var failed = false

    func run() async throws {
        try await AdminStore.run(options) { opened in
            let entries = try await opened.store.providerRevocations().filter { !failed || $0.failedAt != nil }
            if output.json {
                Output.json(.object(["revocations": .array(entries.map { .object(Self.json($0)) })]))
                return
            }
            Output.table(
                ["ID", "STATE", "PROVIDER", "USER", "QUEUED", "ATTEMPTS", "NEXT", "LAST ERROR"],
                entries.map {
                    [
                        $0.id, $0.failedAt == nil ? "pending" : "failed", $0.provider, $0.userID, Output.date($0.createdAt), String($0.attempts),
                        $0.failedAt == nil ? Output.date($0.nextAttemptAt) : "-", $0.lastError ?? "-"
                    ]
                }
            )
        }
    }

    /// An entry as `--json` prints it: everything but the sealed token.
    static func json(_ entry: ProviderRevocation) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(entry.id), "state": .string(entry.failedAt == nil ? "pending" : "failed"), "provider": .string(entry.provider),
            "user_id": .string(entry.userID), "subject": .string(entry.subject), "queued_at": .string(Output.date(entry.createdAt)),
            "attempts": .integer(Int64(entry.attempts)), "next_attempt_at": .string(Output.date(entry.nextAttemptAt))
        ]
        if let clientID = entry.clientID { object["client_id"] = .string(clientID) }
        if let error = entry.lastError { object["last_error"] = .string(error) }
        if let failedAt = entry.failedAt { object["failed_at"] = .string(Output.date(failedAt)) }
        return object
    }
}
