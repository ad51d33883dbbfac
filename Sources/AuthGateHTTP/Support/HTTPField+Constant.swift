public import HTTPTypes

extension HTTPField.Name {
    /// A field name written in our source as a literal (`X-Request-Id`): a valid token by
    /// construction, so the failable initializer cannot fail. Never call it with text from
    /// outside; `HeaderParsingTests` builds every constant the gateway declares.
    static func constant(_ literal: StaticString) -> HTTPField.Name {
        let text = literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        guard let name = HTTPField.Name(text) else { preconditionFailure("\(text) is not an HTTP field name") }
        return name
    }
}
