public import ArgumentParser
import Foundation

/// `authgate`: the gateway server and its operator tools.
public struct AuthGateCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "authgate",
        abstract: "AuthGate: a GoTrue-compatible auth gateway and edge proxy.",
        version: "0.1.0",
        subcommands: [
            ServeCommand.self, CheckConfigCommand.self, VerifyIDTokenCommand.self, KeysCommand.self, UsersCommand.self, SessionsCommand.self,
            TokensCommand.self, DoctorCommand.self, RevocationsCommand.self, AuditCommand.self
        ]
    )

    public init() {}
}

extension AuthGateCommand {
    /// Parses the process arguments and runs the chosen command; the executable's only call.
    /// Exit codes: 0 done, 1 not found or refused, 2 usage or configuration error (ArgumentParser's
    /// own usage failures, 64, are reported as 2 like every other usage error).
    public static func runFromCommandLine() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            guard code == .validationFailure else { exit(withError: error) }
            let message = fullMessage(for: error)
            if !message.isEmpty { printError(message) }
            Foundation.exit(ExitStatus.configurationError.rawValue)
        }
    }
}
