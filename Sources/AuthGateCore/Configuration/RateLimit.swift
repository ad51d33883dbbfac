/// A request budget: at most ``count`` requests per ``window`` (written `150/5m`).
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// Requests allowed per window.
    public var count: Int
    /// The window length.
    public var window: Duration

    public init(count: Int, window: Duration) {
        self.count = count
        self.window = window
    }

    public var description: String { "\(count)/\(ConfigurationValueParsers.format(window))" }
}
