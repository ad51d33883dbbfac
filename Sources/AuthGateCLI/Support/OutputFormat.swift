import ArgumentParser
import AuthGateCore
import Foundation

/// `--json` for scripts; human tables otherwise.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (one document) instead of a table.")
    var json = false
}

/// Plain-text tables with aligned columns, and JSON documents.
enum Output {
    /// Prints rows under a header, each column as wide as its widest cell.
    static func table(_ header: [String], _ rows: [[String]]) {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        print(line(header))
        for row in rows { print(line(row)) }
    }

    /// Prints a JSON document.
    static func json(_ value: JSONValue) {
        print(String(decoding: value.serialized(), as: UTF8.self))
    }

    /// A date for tables: UTC, to the second.
    static func date(_ date: Date?) -> String {
        guard let date else { return "-" }
        return date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }
}
