/// What an operator may give a user it creates (`POST /admin/users`), checked before anything is
/// written.
public enum AdminUserFields {
    /// An email address in the shape every mail system accepts: 3 to 254 bytes, one `@` with a
    /// non-empty part on each side, a domain that neither starts nor ends with a dot, and no space,
    /// control byte, quote, angle bracket, backslash, comma or semicolon (no display name, no
    /// comment, no quoted local part, no list). Non-ASCII
    /// letters are allowed; such an address is stored but never linked automatically
    /// (``EmailAddress/allowsAutomaticLinking(_:)``).
    public static func isEmail(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (3...254).contains(bytes.count), let at = bytes.firstIndex(of: UInt8(ascii: "@")), at > 0, at < bytes.count - 1,
            bytes[(at + 1)...].firstIndex(of: UInt8(ascii: "@")) == nil
        else { return false }
        let domain = bytes[(at + 1)...]
        guard domain.first != UInt8(ascii: "."), domain.last != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 != 0x7F && !notInAddresses.contains($0) }
    }

    /// `"`, `<`, `>`, `\`, `,` and `;`: the bytes of display names, comments, quoted parts and lists.
    private static let notInAddresses: Set<UInt8> = Set("\"<>\\,;".utf8)

    /// A role for the access token's `role` claim (and Postgres' `SET ROLE` behind PostgREST):
    /// 1 to 63 ASCII letters, digits, `_` or `-`.
    public static func isRole(_ text: String) -> Bool {
        (1...63).contains(text.utf8.count)
            && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F || $0 == 0x2D }
    }
}
