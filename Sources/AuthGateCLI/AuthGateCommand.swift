public import ArgumentParser

/// `authgate`: the gateway server and its operator tools.
public struct AuthGateCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "authgate",
        abstract: "AuthGate: a GoTrue-compatible auth gateway and edge proxy.",
        version: "0.1.0",
        subcommands: [ServeCommand.self, CheckConfigCommand.self, VerifyIDTokenCommand.self, KeysCommand.self]
    )

    public init() {}
}

extension AuthGateCommand {
    /// Parses the process arguments and runs the chosen command; the executable's only call.
    public static func runFromCommandLine() async {
        await main()
    }
}
