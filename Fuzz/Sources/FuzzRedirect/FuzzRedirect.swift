import FuzzSupport

@testable import AuthGateCore

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzRedirect_main")
public func fuzzRedirectMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzRedirect(data, size) }
}

/// The browser flow's outside text: a query or form (``FormFields``), a `redirect_to`
/// (``RedirectTarget``) and an allow-list glob (``RedirectGlob``) with the decision made on them
/// (``RedirectPolicy``). Input: a glob, NUL, a candidate URL, NUL, a form. Properties: no trap; a
/// form's fields encode and parse back to themselves; a URL's canonical text is canonical (parsed
/// again, it is itself), printable ASCII, without user information or a dot segment; a decision
/// made on the canonical text is the decision made on the text as sent; the form's text read as a
/// `Cookie` header yields no value holding a `;`, and a flow cookie appended to it is found.
public func fuzzRedirect(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let pattern = input.text()
    let candidate = input.text()
    let formText = input.text()

    if let form = try? FormFields(parsing: formText) {
        let again = try? FormFields(parsing: FormFields.encoded(form.fields.map { ($0.name, $0.value) }))
        fuzzCheck(again == form, "a form's fields did not read back: \(formText.debugDescription)")
    }

    let cookieName = FlowCookie.name(state: "s", callbackURL: "https://auth.example.com/auth/v1/callback")
    let found = FlowCookie.values(named: cookieName, in: [formText, formText + "; " + cookieName + "=QUJD-_x"])
    fuzzCheck(found.allSatisfy { !$0.contains(UInt8(ascii: ";")) }, "a cookie value holds a ';': \(formText.debugDescription)")
    fuzzCheck(found.last == Array("QUJD-_x".utf8), "an appended flow cookie was not found: \(formText.debugDescription)")

    if let target = RedirectTarget(candidate) {
        fuzzCheck(RedirectTarget(target.text)?.text == target.text, "canonical text not canonical: \(candidate.debugDescription) -> \(target.text)")
        fuzzCheck(target.text.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "a byte outside printable ASCII: \(target.text.debugDescription)")
        if let host = target.host {
            fuzzCheck(!host.contains("@"), "user information in the host: \(target.text)")
        }
        fuzzCheck(RedirectTarget.hasDotSegment(ArraySlice(target.text.utf8)) == false, "a dot segment: \(target.text)")
    }

    guard let glob = try? RedirectGlob(pattern), let site = RedirectTarget("https://app.example.com") else { return 0 }
    let policy = RedirectPolicy(siteURL: site, allowList: [glob])
    if let allowed = policy.allowed(candidate) {
        fuzzCheck(
            policy.allowed(allowed.text)?.text == allowed.text,
            "the canonical form is decided otherwise: \(candidate.debugDescription) -> \(allowed.text)")
    }
    return 0
}
