import ArgumentParser
import AuthGateCore
import Foundation

/// `--config F` (or `AUTHGATE_CONFIG`), shared by every command that reads the configuration.
struct ConfigurationOptions: ParsableArguments {
    @Option(name: .long, help: "The YAML configuration file (default: $AUTHGATE_CONFIG, else the built-in development defaults).")
    var config: String?

    /// The path given, or `AUTHGATE_CONFIG`, or nil for the built-in defaults.
    var resolvedPath: String? {
        if let config { return config }
        if let path = ProcessInfo.processInfo.environment["AUTHGATE_CONFIG"], !path.isEmpty { return path }
        return nil
    }

    /// Loads and validates the configuration.
    func load() throws(ConfigurationError) -> AuthGateConfiguration {
        try AuthGateConfiguration.load(path: resolvedPath, environment: ProcessInfo.processInfo.environment)
    }

    /// Loads and validates the configuration, or prints every problem and exits 2.
    func loadOrExit() throws -> AuthGateConfiguration {
        do {
            return try load()
        } catch {
            printError(error.description)
            throw ExitStatus.configurationError
        }
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Prints `message` to standard error and returns exit code 1, for `throw refusal("no user x")`.
func refusal(_ message: String) -> ExitCode {
    printError(message)
    return ExitStatus.refused
}

/// Exit codes shared by every command: 0 done, 1 not found or refused, 2 usage or configuration error.
enum ExitStatus {
    static let refused = ExitCode(1)
    static let configurationError = ExitCode(2)
}
