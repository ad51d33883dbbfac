import Foundation
import Logging
import Testing

@testable import AuthGateCore

/// The log line, built as bytes: the same JSON the handler wrote when it grew a `String` scalar by
/// scalar, with the timestamp now to the millisecond.
@Suite("JSON log lines", .timeLimit(.minutes(1)))
struct JSONLogHandlerTests {
    /// The handler's earlier writer, kept here as the reference for everything after `ts`.
    private static func reference(label: String, level: Logger.Level, message: String, fields: Logger.Metadata) -> String {
        let quoted = JSONStringReference.quoted
        var line = "\"level\":\"\(level.rawValue)\",\"logger\":" + quoted(label) + ",\"msg\":" + quoted(message)
        for key in fields.keys.sorted() { line += "," + quoted(key) + ":" + quoted(fields[key]?.description ?? "") }
        return line + "}\n"
    }

    @Test("same JSON as before after the timestamp: escapes, control and non-ASCII characters, merged metadata in sorted order")
    func sameLine() throws {
        let at = Date(timeIntervalSince1970: 1_764_154_464.123_9)
        let handlerMetadata: Logger.Metadata = ["gw.request_id": "req-1", "b": "handler", "nested": ["x": "1"], "list": ["a", "b"]]
        let cases: [(String, Logger.Metadata?)] = [
            ("request", nil), ("quote \" backslash \\ newline \n cr \r tab \t bell \u{7} nul \u{0} é 🙂", ["b": "event wins", "a": "\u{1f}"]),
            ("", [:]), ("line\u{2028}separator", ["ü": "\u{7f}"])
        ]
        for (message, extra) in cases {
            let bytes = JSONLogHandler.line(
                label: "auth\"gate", level: .warning, message: message, metadata: handlerMetadata, extra: extra, at: at)
            let text = String(decoding: bytes, as: UTF8.self)
            let prefix = "{\"ts\":\"2025-11-26T10:54:24.123Z\","
            #expect(text.hasPrefix(prefix), "\(text)")
            var fields = handlerMetadata
            if let extra { fields.merge(extra) { _, new in new } }
            #expect(String(text.dropFirst(prefix.count)) == Self.reference(label: "auth\"gate", level: .warning, message: message, fields: fields))
            // Every line is one JSON object that reads back.
            let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            #expect(object["msg"] as? String == message)
        }
    }
}
