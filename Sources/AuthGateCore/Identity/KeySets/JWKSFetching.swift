import RedisBridge

/// Fetches a provider's key material over HTTP: the seam between ``ProviderKeySet`` and the
/// network (AsyncHTTPClient in production, the same client against a local server in tests).
public protocol JWKSFetching: Sendable {
    /// GETs `url` and returns the body and how long it may be cached (`Cache-Control: max-age`
    /// minus `Age`), if the response says.
    func fetch(_ url: String) async throws -> FetchedDocument
}

/// A fetched document and its freshness lifetime.
public struct FetchedDocument: Sendable {
    public let body: [UInt8]
    /// From `Cache-Control: max-age` minus `Age`; nil when the response gives none.
    public let maxAge: Duration?

    public init(body: [UInt8], maxAge: Duration?) {
        self.body = body
        self.maxAge = maxAge
    }

    /// Reads the freshness lifetime from `Cache-Control` and `Age` header values.
    /// `no-store`/`no-cache` give zero.
    public static func maxAge(cacheControl: String?, age: String?) -> Duration? {
        guard let cacheControl else { return nil }
        var maxAge: Int64?
        for directive in cacheControl.lowercased().split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map(\.trimmed)
            switch parts.first {
            case "no-store", "no-cache":
                return .zero
            case "max-age":
                if parts.count == 2, let value = DecimalInteger.parse(parts[1].trimmingQuotes, in: 0...Int64.max) { maxAge = value }
            default:
                continue
            }
        }
        guard let maxAge else { return nil }
        let ageSeconds = age.flatMap { DecimalInteger.parse($0.trimmed, in: 0...Int64.max) } ?? 0
        return .seconds(max(0, maxAge - max(0, ageSeconds)))
    }
}

extension String {
    fileprivate var trimmingQuotes: String {
        var text = Substring(self)
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        return String(text)
    }
}
