public import Logging

/// `logging.format: text`: swift-log's `StreamLogHandler` lines, written through a
/// ``LogLineWriter`` that is told which lines are urgent. `StreamLogHandler` hands its stream a
/// finished line and not its level, so this handler keeps two, one whose stream marks every line
/// urgent (warning or worse, written at once as in JSON) and one whose stream does not (gathered
/// for up to the writer's flush interval), and sends each event to the one its level calls for.
public struct TextLogHandler: LogHandler {
    private var gathered: StreamLogHandler
    private var urgent: StreamLogHandler

    public init(label: String, level: Logger.Level, output: LogLineWriter) {
        gathered = StreamLogHandler(label: label, stream: LogLineWriter.TextStream(output, urgent: false))
        urgent = StreamLogHandler(label: label, stream: LogLineWriter.TextStream(output, urgent: true))
        logLevel = level
    }

    public var logLevel: Logger.Level {
        get { gathered.logLevel }
        set {
            gathered.logLevel = newValue
            urgent.logLevel = newValue
        }
    }

    public var metadata: Logger.Metadata {
        get { gathered.metadata }
        set {
            gathered.metadata = newValue
            urgent.metadata = newValue
        }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { gathered.metadataProvider }
        set {
            gathered.metadataProvider = newValue
            urgent.metadataProvider = newValue
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { gathered[metadataKey: key] }
        set {
            gathered[metadataKey: key] = newValue
            urgent[metadataKey: key] = newValue
        }
    }

    public func log(event: LogEvent) {
        if event.level >= .warning { urgent.log(event: event) } else { gathered.log(event: event) }
    }
}
