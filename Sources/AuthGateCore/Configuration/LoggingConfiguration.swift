/// `logging:`: level and line format.
public struct LoggingConfiguration: Sendable {
    /// The lowest level written.
    public enum Level: String, Sendable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    /// How each line is written.
    public enum Format: String, Sendable, CaseIterable {
        /// One JSON object per line (production).
        case json
        /// Human-readable text.
        case text
    }

    public var level: Level
    public var format: Format

    init(reading section: ConfigurationSection) {
        level = section.choice("level", default: .info)
        format = section.choice("format", default: .json)
        section.finish()
    }
}
