public import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A swift-log handler that writes one JSON object per line to standard error:
/// `{"ts":"2026-11-26T10:54:24.123Z","level":"info","logger":"authgate","msg":"…","gw.request_id":"…",…}`
/// (metadata in sorted name order).
///
/// Values are written as given: callers never put tokens, keys or Authorization values in
/// messages or metadata (see the log-secrets test).
///
/// At `info` every request writes its access line here, so a line is built as bytes in one
/// buffer (``line(label:level:message:metadata:extra:at:)``): the timestamp from
/// `Date.withRFC3339WithMilliseconds`, strings escaped by
/// ``JSONValue``'s writer. Foundation's ISO 8601 formatter and a `String` grown scalar by scalar
/// made an access line cost about as much as the request it described.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let output: LogLineWriter?

    /// A handler writing through `output` (`authgate serve`: a writer thread, so no event loop
    /// waits on standard error's reader), or straight to standard error when nil.
    public init(label: String, level: Logger.Level, output: LogLineWriter? = nil) {
        self.label = label
        self.logLevel = level
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let bytes = Self.line(
            label: label, level: event.level, message: event.message.description, metadata: metadata, extra: event.metadata, at: Date())
        if let output {
            output.write(bytes, urgent: event.level >= .warning)
        } else {
            _ = LogLineWriter.writeFully(2, bytes)
        }
    }

    /// One log line, newline included: the handler's metadata with the event's (the event's win
    /// on a shared name), in sorted name order, every value as its `description`.
    static func line(
        label: String, level: Logger.Level, message: String, metadata: Logger.Metadata, extra: Logger.Metadata?, at date: Date
    ) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line.append(contentsOf: #"{"ts":""#.utf8)
        date.withRFC3339WithMilliseconds { line.append(contentsOf: $0) }
        line.append(contentsOf: #"","level":""#.utf8)
        line.append(contentsOf: level.rawValue.utf8)
        line.append(contentsOf: #"","logger":"#.utf8)
        JSONValue.writeString(label, into: &line)
        line.append(contentsOf: #","msg":"#.utf8)
        JSONValue.writeString(message, into: &line)
        var fields = metadata
        if let extra, !extra.isEmpty { fields.merge(extra) { _, new in new } }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line.append(UInt8(ascii: ","))
            JSONValue.writeString(key, into: &line)
            line.append(UInt8(ascii: ":"))
            JSONValue.writeString(value.description, into: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        return line
    }
}
