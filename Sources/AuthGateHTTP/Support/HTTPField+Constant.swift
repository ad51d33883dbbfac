import HTTPTypes

extension HTTPField.Name {
    /// A field name written in our source as a literal (`X-Request-Id`). HTTPTypes has no
    /// non-failable initializer, and nothing here may trap: a literal that were not a valid token
    /// would fall back to `Via`, which the gateway never sets, and `HeaderParsingTests` (which
    /// builds every such constant and checks its name) would fail. Never call it with text from
    /// outside; build each name once, in a `static let`.
    static func constant(_ literal: StaticString) -> HTTPField.Name {
        let text = literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        return HTTPField.Name(text) ?? .via
    }
}
