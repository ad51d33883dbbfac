import HTTPTypes
import HummingbirdCore
import RedisBridge

/// The page an admin listing asks for (`page`, `per_page`, GoTrue's paging): `page` from 1,
/// `per_page` from 1, at most 1,000 (50 by default). Anything else is 400 `validation_failed`.
struct AdminPage {
    let page: Int
    let perPage: Int
    /// Where the page starts; nil for a page so far past any end that the offset overflows
    /// (it is empty, never an overflow).
    let offset: Int?

    init(_ query: FlatDictionary<Substring, Substring>) throws {
        page = try Self.positive(query["page"], name: "page", default: 1)
        perPage = min(try Self.positive(query["per_page"], name: "per_page", default: 50), 1000)
        let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: perPage)
        self.offset = overflow ? nil : offset
    }

    private static func positive(_ text: Substring?, name: String, default value: Int) throws -> Int {
        guard let text else { return value }
        guard let number = DecimalInteger.parse(text, in: 1...Int.max) else {
            throw GoTrueError(.badRequest, code: "validation_failed", message: "\(name) must be a positive number")
        }
        return number
    }
}
