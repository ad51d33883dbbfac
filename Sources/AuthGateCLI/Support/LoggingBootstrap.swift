import AuthGateCore
import Logging

/// Installs the process-wide log handler once, from `logging:`.
enum LoggingBootstrap {
    static func bootstrap(_ configuration: LoggingConfiguration) {
        let level = Logger.Level(rawValue: configuration.level.rawValue) ?? .info
        switch configuration.format {
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level) }
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
