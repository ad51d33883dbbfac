import AuthGateTestSupport
import Testing

/// The tamper helper the signature tests rely on always changes the signature.
@Suite("Tampered tokens in tests")
struct TamperedTokenTests {
    @Test("a signature that already ends or starts in the replacement characters is still changed")
    func alwaysChanges() {
        // "…AA" appended to a signature ending in "AA" was the same token: the CLI test flaked.
        for token in ["h.p.xyzAA", "h.p.AAAA", "h.p.BAAA", "h.p.Q", "h.p.A"] {
            let changed = TamperedToken.signatureChanged(token)
            #expect(changed != token, "\(token)")
            #expect(changed.count == token.count && changed.hasPrefix("h.p."), "\(changed)")
        }
        #expect(TamperedToken.signatureChanged("h.p.") != "h.p.")
    }
}
