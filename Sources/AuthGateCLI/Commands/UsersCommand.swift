import ArgumentParser
import AuthGateCore
import AuthGateHTTP
import Foundation
import RedisBridge

/// `authgate users …`: find, invite, ban and delete users in the gateways' store.
struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "List, show, invite, ban and delete users.",
        subcommands: [ListUsersCommand.self, ShowUserCommand.self, InviteUserCommand.self, BanUserCommand.self, DeleteUserCommand.self]
    )
}

/// `authgate users invite <email> [--confirmed]`: the admin API's `POST /admin/users`.
struct InviteUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Create a user by email: the first sign-in whose provider vouches for that email joins it.",
        discussion: "With users.disable_signup on, this is how a new user gets in. Exit 1 when another user holds the email."
    )

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The email address.")
    var email: String
    @Flag(help: "You vouch for the address: the user's email_confirmed_at is set.")
    var confirmed = false

    func validate() throws {
        guard AdminUserFields.isEmail(email) else { throw ValidationError("\(ProviderKeySet.printable(email)) is not an email address") }
    }

    func run() async throws {
        try await AdminStore.run(options) { opened in
            let new = AdminService.NewUser(email: email, emailConfirmed: confirmed)
            let user: UserRecord
            do {
                user = try await opened.admin.createUser(new, audience: opened.configuration.tokens.audience, now: Date())
            } catch let error as AuthGateError where error.code == .emailExists {
                throw refusal("another user holds \(new.email)")
            }
            if output.json {
                Output.json(.object(GoTrueJSON.user(user, identities: [])))
            } else {
                print("invited \(user.email ?? "") as user \(user.id)")
            }
        }
    }
}

/// `authgate users list [--provider P] [--anonymous] [--limit N] [--cursor C]`.
struct ListUsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List users, oldest first.")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only users with an identity of this provider (apple, google, …).")
    var provider: String?
    @Flag(help: "Only anonymous users.")
    var anonymous = false
    @Option(help: "At most this many users (1-1000).")
    var limit = 50
    @Option(help: "Continue from the cursor a previous page printed.")
    var cursor: String?

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000") }
        if let cursor, DecimalInteger.parse(cursor, in: 0...Int.max) == nil {
            throw ValidationError("--cursor must be a cursor printed by a previous page")
        }
    }

    func run() async throws {
        try await AdminStore.run(options) { opened in
            var offset = cursor.flatMap { DecimalInteger.parse($0, in: 0...Int.max) } ?? 0
            var matched: [UserRecord] = []
            var total = 0
            // Filters are applied while paging through the store, so a page holds `limit` matches.
            while matched.count < limit {
                let page = try await opened.admin.users(offset: offset, limit: 200)
                total = page.total
                if page.users.isEmpty { break }
                for user in page.users {
                    offset += 1
                    if matches(user) { matched.append(user) }
                    if matched.count == limit { break }
                }
            }
            let next = offset < total ? String(offset) : nil
            if output.json {
                var document: [String: JSONValue] = [
                    "users": .array(matched.map { .object(GoTrueJSON.user($0, identities: [])) }), "total": .integer(Int64(total))
                ]
                document["next_cursor"] = next.map(JSONValue.string) ?? .null
                Output.json(.object(document))
                return
            }
            Output.table(
                ["ID", "EMAIL", "PROVIDERS", "ANONYMOUS", "CREATED", "BANNED UNTIL"],
                matched.map { user in
                    [
                        user.id, user.email ?? "-", providers(of: user).joined(separator: ","), user.isAnonymous ? "yes" : "no",
                        Output.date(user.createdAt), Output.date(user.bannedUntil)
                    ]
                }
            )
            print("\(matched.count) shown of \(total) users" + (next.map { "; next page: --cursor \($0)" } ?? ""))
        }
    }

    private func matches(_ user: UserRecord) -> Bool {
        if anonymous, !user.isAnonymous { return false }
        if let provider, !providers(of: user).contains(provider) { return false }
        return true
    }

    private func providers(of user: UserRecord) -> [String] {
        if case .array(let list) = user.appMetadata["providers"] { return list.compactMap(\.stringValue) }
        return user.isAnonymous ? ["anonymous"] : []
    }
}

/// `authgate users show <id|provider:sub|email>`.
struct ShowUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show a user with its identities and sessions.")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "A user id, provider:subject (apple:001234.abcd), or an email address.")
    var user: String

    func run() async throws {
        try await AdminStore.run(options) { opened in
            guard let found = try await opened.admin.findUser(user) else {
                throw refusal("no user \(user)")
            }
            let identities = try await opened.admin.identities(of: found.id)
            let sessions = try await opened.admin.sessions(of: found.id)
            if output.json {
                var document = GoTrueJSON.user(found, identities: identities)
                document["sessions"] = .array(sessions.map { .object(GoTrueJSON.sessionRecord($0)) })
                Output.json(.object(document))
                return
            }
            Output.table(
                ["FIELD", "VALUE"],
                [
                    ["id", found.id], ["email", found.email ?? "-"], ["role", found.role], ["anonymous", found.isAnonymous ? "yes" : "no"],
                    ["created", Output.date(found.createdAt)], ["last sign-in", Output.date(found.lastSignInAt)],
                    ["banned until", Output.date(found.bannedUntil)], ["deleted", Output.date(found.deletedAt)]
                ]
            )
            print("")
            Output.table(
                ["PROVIDER", "SUBJECT", "EMAIL", "CREATED"], identities.map { [$0.provider, $0.subject, $0.email ?? "-", Output.date($0.createdAt)] })
            print("")
            Output.table(
                ["SESSION", "CREATED", "REFRESHED", "AAL"], sessions.map { [$0.id, Output.date($0.createdAt), Output.date($0.refreshedAt), $0.aal] })
        }
    }
}

/// `authgate users ban <id> --for 24h|--until T|--lift`.
struct BanUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ban", abstract: "Ban a user (its sessions end and its tokens are refused at once), or lift a ban."
    )

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "A user id, provider:subject (apple:001234.abcd), or an email address.")
    var user: String
    @Option(name: .customLong("for"), help: "How long: 30m, 24h, 7d, …")
    var duration: String?
    @Option(help: "Until this time (ISO 8601, like 2026-12-31T00:00:00Z).")
    var until: String?
    @Flag(help: "Lift the ban.")
    var lift = false

    func validate() throws {
        guard [duration != nil, until != nil, lift].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --for, --until and --lift")
        }
        if let duration, (ConfigurationValueParsers.duration(duration) ?? .zero) <= .zero {
            throw ValidationError("--for \(duration) is not a duration like 24h")
        }
        if let until, (try? Date(until, strategy: .iso8601)) == nil { throw ValidationError("--until \(until) is not an ISO 8601 time") }
    }

    func run() async throws {
        let now = Date()
        try await AdminStore.run(options) { opened in
            let userID = try await opened.userID(user)
            let updated: UserRecord?
            if lift {
                updated = try await opened.admin.liftBan(userID, now: now)
            } else {
                let end =
                    until.flatMap { try? Date($0, strategy: .iso8601) }
                    ?? now.addingTimeInterval(ConfigurationValueParsers.duration(duration ?? "")?.inSeconds ?? 0)
                updated = try await opened.admin.ban(userID, until: end, now: now)
            }
            guard let updated else {
                throw refusal("no user \(user)")
            }
            if output.json {
                Output.json(.object(GoTrueJSON.user(updated, identities: [])))
            } else if lift {
                print("ban lifted for \(updated.id)")
            } else {
                print("banned \(updated.id) until \(Output.date(updated.bannedUntil)); its sessions ended")
            }
        }
    }
}

/// `authgate users delete <id> [--soft]`.
struct DeleteUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a user; its sessions end at once.")

    @OptionGroup var options: ConfigurationOptions
    @Argument(help: "A user id, provider:subject (apple:001234.abcd), or an email address.")
    var user: String
    @Flag(help: "Keep the record (email, phone and identities removed; sign-in refused for good).")
    var soft = false

    func run() async throws {
        try await AdminStore.run(options) { opened in
            let userID = try await opened.userID(user)
            guard try await opened.admin.deleteUser(userID, soft: soft, now: Date()) else {
                throw refusal("no user \(user)")
            }
            print(soft ? "soft-deleted \(userID)" : "deleted \(userID)")
        }
    }
}
