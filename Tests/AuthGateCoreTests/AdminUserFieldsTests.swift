import Testing

@testable import AuthGateCore

@Suite("what an operator may give a user it creates", .timeLimit(.minutes(3)))
struct AdminUserFieldsTests {
    @Test("emails: one @ between two non-empty parts, 3 to 254 bytes, no space, control byte, quote, bracket, comma or semicolon")
    func emails() {
        for good in ["a@b.c", "first.last+tag@example.co.uk", "ünïcode@example.com", "x@localhost"] {
            #expect(AdminUserFields.isEmail(good), "\(good)")
        }
        let long = String(repeating: "a", count: 250) + "@b.cd"
        for bad in [
            "", "@", "a@", "@b", "a@@b", "a@b@c", "a b@c.d", "a@b.c ", "\"a\"@b.c", "Name <a@b.c>", "a@b.c,d@e.f", "a@b.c;", "a\\b@c.d",
            "a@.b", "a@b.", "a\u{0}@b.c", "a\u{7F}@b.c", "a\t@b.c", long
        ] {
            #expect(!AdminUserFields.isEmail(bad), "\(bad.debugDescription)")
        }
    }

    @Test("roles: 1 to 63 ASCII letters, digits, '_' or '-'")
    func roles() {
        for good in ["authenticated", "service_role", "Editor-2", String(repeating: "r", count: 63)] {
            #expect(AdminUserFields.isRole(good), "\(good)")
        }
        for bad in ["", "a b", "rôle", "a;drop", "{x}", "@", "[", "`", String(repeating: "r", count: 64)] {
            #expect(!AdminUserFields.isRole(bad), "\(bad)")
        }
    }
}
