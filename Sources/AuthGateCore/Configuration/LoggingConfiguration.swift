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
    /// The most bytes of log lines held while standard error's reader is behind; lines past it
    /// are dropped and counted (see ``LogLineWriter``).
    public var buffer: Int

    init(reading section: ConfigurationSection) {
        level = section.choice("level", default: .info)
        format = section.choice("format", default: .json)
        buffer = section.byteSize("buffer", default: 4 << 20, range: (64 << 10)...(1 << 30))
        section.finish()
    }
}
