import AuthGateCore
import Logging

/// Installs the process-wide log handler once, from `logging:`.
enum LoggingBootstrap {
    /// Bootstraps swift-log with lines written by a ``LogLineWriter`` thread holding up to
    /// `logging.buffer` bytes; the caller closes the returned writer once the gateway has stopped.
    static func bootstrap(_ configuration: LoggingConfiguration) -> LogLineWriter {
        let level = Logger.Level(rawValue: configuration.level.rawValue) ?? .info
        let writer = LogLineWriter(capacity: configuration.buffer)
        switch configuration.format {
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level, output: writer) }
        case .text:
            LoggingSystem.bootstrap { label in TextLogHandler(label: label, level: level, output: writer) }
        }
        return writer
    }
}
