import ArgumentParser
import AuthGateCore
import AuthGateHTTP

/// `authgate check-config`: validates the configuration and prints it with defaults filled in
/// and secrets masked (exit 0), or lists every problem with the key it is about (exit 1).
struct CheckConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate the configuration and print the effective values (secrets masked)."
    )

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        do {
            let configuration = try options.load()
            // The listener's certificate and key: loadable, unexpired, and a pair.
            if let tls = configuration.server.tls { _ = try ServerTLSContext(configuration: tls, http2: configuration.server.http2.enabled) }
            print("# effective configuration from \(configuration.sourcePath ?? "the built-in defaults")")
            if !configuration.appliedEnvironmentOverrides.isEmpty {
                print("# environment overrides: \(configuration.appliedEnvironmentOverrides.joined(separator: ", "))")
            }
            if configuration.isDevelopmentMode {
                print("# development mode: memory store and a signing key generated at start; nothing persists")
            }
            print(configuration.renderedYAML(), terminator: "")
        } catch let error as ConfigurationError {
            printError(error.description)
            throw ExitCode(1)
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
    }
}
