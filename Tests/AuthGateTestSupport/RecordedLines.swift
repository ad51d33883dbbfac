public import Logging
import Synchronization

/// The messages a logger wrote, for tests that count lines:
/// `Logger(label: "test") { _ in RecordedLines.Handler(lines: recorded) }`.
public final class RecordedLines: Sendable {
    private let recorded = Mutex<[String]>([])

    public init() {}

    /// Every message so far, in order.
    public var messages: [String] { recorded.withLock { $0 } }

    /// How many lines had exactly `message`.
    public func count(of message: String) -> Int {
        recorded.withLock { $0.filter { $0 == message }.count }
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
            lines.recorded.withLock { $0.append(event.message.description) }
        }
    }
}
