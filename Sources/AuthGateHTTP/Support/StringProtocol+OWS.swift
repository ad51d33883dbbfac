extension StringProtocol {
    /// The text without leading and trailing optional whitespace (spaces and tabs, RFC 9110 OWS),
    /// as list elements of header values are read.
    var trimmingOWS: String {
        String(self.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
