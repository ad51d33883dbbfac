/// How AuthGate compares email addresses, written down because an unwritten rule is an account
/// takeover waiting to happen (Unicode case mapping turns U+212A KELVIN SIGN into `k` and
/// U+0130 into `i` plus a dot; full-width letters stay distinct code points):
///
/// - the one form of an address is the address with ASCII `A`-`Z` lower-cased and nothing else
///   changed: no Unicode case mapping, folding or normalization;
/// - an address holding any character outside ASCII is kept as given, but a sign-in is never
///   linked to an existing user through it (automatic linking needs an ASCII address).
public enum EmailAddress {
    /// `text` with ASCII letters lower-cased, everything else as it was.
    public static func canonical(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// Whether a sign-in may be linked to an existing user through this (canonical) address:
    /// only when it is all ASCII.
    public static func allowsAutomaticLinking(_ address: String) -> Bool {
        address.utf8.allSatisfy { $0 < 0x80 }
    }
}
