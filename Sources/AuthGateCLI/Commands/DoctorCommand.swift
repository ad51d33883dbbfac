import ArgumentParser
import AuthGateCore
import Foundation

/// `authgate doctor [--repair]`: checks that every index entry in Redis points at a record that
/// exists and points back (identities, emails, sessions, the user list). Read-only unless
/// `--repair`; exits 0 when the store is consistent (or every finding was repaired), 1 otherwise.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the Redis store's consistency (read-only), and with --repair fix dangling entries."
    )

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "Fix what can be fixed: remove entries that point at nothing, restore missing index entries.")
    var repair = false

    func run() async throws {
        let findings = try await AdminStore.run(options) { opened in
            try await StoreDoctor(store: opened.redisStore).examine(repair: repair)
        }
        let unrepaired = findings.filter { !$0.repaired }
        if output.json {
            Output.json(
                .object([
                    "consistent": .bool(unrepaired.isEmpty),
                    "findings": .array(
                        findings.map {
                            .object(["kind": .string($0.kind), "key": .string($0.key), "detail": .string($0.detail), "repaired": .bool($0.repaired)])
                        })
                ]))
        } else {
            for finding in findings { print(finding) }
            print(
                findings.isEmpty
                    ? "store consistent: nothing to repair"
                    : "\(findings.count) finding(s), \(findings.count - unrepaired.count) repaired, \(unrepaired.count) left"
                        + (repair || unrepaired.isEmpty ? "" : " (run with --repair to fix them)"))
        }
        if !unrepaired.isEmpty { throw ExitStatus.refused }
    }
}
