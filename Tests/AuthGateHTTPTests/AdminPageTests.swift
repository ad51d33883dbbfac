import HummingbirdCore
import Testing

@testable import AuthGateHTTP

/// GoTrue's paging of admin listings (`page`, `per_page`), read once for both listings.
@Suite("Admin paging")
struct AdminPageTests {
    private func page(_ query: String) throws -> AdminPage { try AdminPage(URI("/auth/v1/admin/users?\(query)").queryParameters) }

    @Test("defaults, the per_page cap, offsets; a page so far that its offset overflows starts nowhere (empty, no trap)")
    func pages() throws {
        let first = try page("")
        #expect(first.page == 1 && first.perPage == 50 && first.offset == 0)
        let third = try page("page=3&per_page=20")
        #expect(third.offset == 40)
        #expect(try page("per_page=5000").perPage == 1000)
        #expect(try page("page=9223372036854775807&per_page=1000").offset == nil)
        #expect(try page("page=9223372036854775807&per_page=1").offset == 9_223_372_036_854_775_806)
    }

    @Test("zero, negative, non-numbers and numbers past Int are 400 validation_failed")
    func refused() {
        for query in [
            "page=0", "per_page=0", "page=-1", "page=x", "per_page=1.5", "page=", "page=9223372036854775808", "page=%2B2", "per_page=%2B5",
            "page=%202"
        ] {
            #expect(throws: GoTrueError.self, "\(query)") { try page(query) }
        }
    }
}
