public import Logging
import Synchronization

/// The messages a logger wrote, for tests that count lines:
/// `Logger(label: "test") { _ in RecordedLines.Handler(lines: recorded) }`.
public final class RecordedLines: Sendable {
    /// One line: its level, message and metadata (the handler's and the line's own).
    public struct Line: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: Logger.Metadata
    }

    private let recorded = Mutex<[Line]>([])

    public init() {}

    /// Every line so far, in order.
    public var lines: [Line] { recorded.withLock { $0 } }

    /// Every message so far, in order.
    public var messages: [String] { recorded.withLock { $0.map(\.message) } }

    /// How many lines had exactly `message`.
    public func count(of message: String) -> Int {
        recorded.withLock { $0.filter { $0.message == message }.count }
    }

    /// A handler that records every line at every level into `lines`.
    public struct Handler: LogHandler {
        let lines: RecordedLines
        public var metadata: Logger.Metadata = [:]
        public var logLevel: Logger.Level = .trace

        public init(lines: RecordedLines) {
            self.lines = lines
        }

        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        public func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, line in line }
            let line = Line(level: event.level, message: event.message.description, metadata: merged)
            lines.recorded.withLock { $0.append(line) }
        }
    }
}
