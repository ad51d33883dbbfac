public import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// A swift-log handler that writes one JSON object per line to standard error:
/// `{"ts":"…","level":"info","logger":"authgate","msg":"…","gw.request_id":"…",…}`.
///
/// Values are written as given: callers never put tokens, keys or Authorization values in
/// messages or metadata (see the log-secrets test).
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        var line = "{\"ts\":\"\(Date().formatted(.iso8601))\",\"level\":\"\(event.level.rawValue)\",\"logger\":"
        Self.appendJSONString(label, to: &line)
        line += ",\"msg\":"
        Self.appendJSONString(event.message.description, to: &line)
        for key in fields.keys.sorted() {
            guard let value = fields[key] else { continue }
            line += ","
            Self.appendJSONString(key, to: &line)
            line += ":"
            Self.appendJSONString(value.description, to: &line)
        }
        line += "}\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(2, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }

    /// Appends `text` as a JSON string literal, escaping quotes, backslashes and control characters.
    static func appendJSONString(_ text: String, to line: inout String) {
        line += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}
