import ArgumentParser
import AuthGateCore
import AuthGateHTTP
import Foundation

/// `authgate sessions …`: list and end sessions. Every ending goes on the revocation stream, so
/// every running gateway refuses the tokens within a second.
struct SessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions",
        abstract: "List and revoke sessions.",
        subcommands: [ListSessionsCommand.self, RevokeSessionCommand.self, RevokeUserSessionsCommand.self]
    )
}

/// `authgate sessions list --user <id>`.
struct ListSessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List a user's live sessions.")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "A user id, provider:subject (apple:001234.abcd), or an email address.")
    var user: String

    func run() async throws {
        try await AdminStore.run(options) { opened in
            let sessions = try await opened.admin.sessions(of: try await opened.userID(user))
            if output.json {
                Output.json(.object(["sessions": .array(sessions.map { .object(GoTrueJSON.sessionRecord($0)) })]))
                return
            }
            Output.table(
                ["SESSION", "CREATED", "REFRESHED", "AAL", "METHODS", "IP", "USER AGENT"],
                sessions.map {
                    [
                        $0.id, Output.date($0.createdAt), Output.date($0.refreshedAt), $0.aal, $0.amr.map(\.method).joined(separator: ","),
                        $0.ip ?? "-", $0.userAgent.map { String($0.prefix(60)) } ?? "-"
                    ]
                }
            )
        }
    }
}

/// `authgate sessions revoke <session-id>`.
struct RevokeSessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke", abstract: "End one session.")

    @OptionGroup var options: ConfigurationOptions
    @Argument(help: "The session id.")
    var session: String

    func run() async throws {
        try await AdminStore.run(options) { opened in
            guard let user = try await opened.admin.revokeSession(session, now: Date()) else {
                throw refusal("no live session \(session)")
            }
            print("revoked session \(session) of user \(user)")
        }
    }
}

/// `authgate sessions revoke-user <user-id>`: sign out everywhere.
struct RevokeUserSessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke-user", abstract: "End every session of a user (sign out everywhere).")

    @OptionGroup var options: ConfigurationOptions
    @Argument(help: "A user id, provider:subject (apple:001234.abcd), or an email address.")
    var user: String

    func run() async throws {
        try await AdminStore.run(options) { opened in
            let userID = try await opened.userID(user)
            let ended = try await opened.admin.signOutEverywhere(userID, now: Date())
            print("signed \(userID) out everywhere: \(ended.count) session(s) ended")
        }
    }
}
