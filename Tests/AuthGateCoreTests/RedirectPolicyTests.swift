import Testing

@testable import AuthGateCore

/// `redirect_to`: the glob syntax of the allow list, the one canonical form of a URL, and GoTrue's
/// order of rules, including the spellings an attacker tries to slip past a matcher.
@Suite("Redirect targets: globs, canonical URLs, GoTrue's rules")
struct RedirectPolicyTests {
    func glob(_ pattern: String) throws -> RedirectGlob { try RedirectGlob(pattern) }

    @Test("globs: * stops at . and /, ** does not, ? is one character, sets, alternatives, escapes")
    func globs() throws {
        // GoTrue's own examples (request_test.go).
        let path = try glob("http://localhost:8000/*")
        #expect(path.matches("http://localhost:8000/path"))
        #expect(path.matches("http://localhost:8000/path?param=1"))
        #expect(!path.matches("http://localhost:8000"))
        #expect(!path.matches("http://localhost:8000/path/to/page"))
        let deep = try glob("https://app.example.com/**")
        #expect(deep.matches("https://app.example.com/a/b.c/d?x=1"))
        #expect(!deep.matches("https://app.example.com.evil.example/a"))
        let sub = try glob("https://*.example.com/cb")
        #expect(sub.matches("https://preview-1.example.com/cb"))
        #expect(!sub.matches("https://a.b.example.com/cb"), "* does not cross a dot")
        #expect(!sub.matches("https://evil.example/x.example.com/cb"))
        #expect(try glob("https://app?.example.com/").matches("https://app2.example.com/"))
        #expect(!(try glob("https://app?.example.com/").matches("https://app.example.com/")))
        #expect(try glob("https://[a-c]x.example.com/").matches("https://bx.example.com/"))
        #expect(!(try glob("https://[!a-c]x.example.com/").matches("https://bx.example.com/")))
        let either = try glob("https://{app,admin}.example.com/{cb,done}")
        #expect(either.matches("https://admin.example.com/done"))
        #expect(!either.matches("https://other.example.com/cb"))
        #expect(try glob("https://x.example.com/[]{]").matches("https://x.example.com/{"), "braces inside a set are members")
        #expect(try glob("https://x.example.com/\\{a,b}").matches("https://x.example.com/{a,b}"))
        #expect(try glob("https://app.example.com/\\*").matches("https://app.example.com/*"))
        #expect(!(try glob("https://app.example.com/\\*").matches("https://app.example.com/x")))
        // Exact entries are exact, query included.
        #expect(try glob("https://app.example.com/cb?x=1").matches("https://app.example.com/cb?x=1"))
        #expect(!(try glob("https://app.example.com/cb").matches("https://app.example.com/cb?x=1")))
        for broken in ["https://[a-", "https://{a,b", "https://a\\", String(repeating: "{a,b}", count: 8)] {
            #expect(throws: RedirectGlob.Failure.self, "\(broken)") { try RedirectGlob(broken) }
        }
    }

    @Test("globs cannot be made slow: stars against a long text that never matches")
    func globsAreLinear() throws {
        let pattern = try glob(String(repeating: "*a", count: 200) + "b")
        #expect(!pattern.matches(String(repeating: "a", count: 2048)))
        let runs = try glob(String(repeating: "**x", count: 100) + "y")
        #expect(!runs.matches(String(repeating: "x", count: 2048)))
    }

    @Test("one canonical form: lower-case scheme and host, no default port; spellings that are not URLs are refused")
    func canonicalTargets() throws {
        #expect(RedirectTarget("HTTPS://App.Example.COM:443/Cb?x=Y#Frag")?.text == "https://app.example.com/Cb?x=Y#Frag")
        #expect(RedirectTarget("http://localhost:3000/cb")?.port == 3000)
        #expect(RedirectTarget("http://[0:0::1]:8080/")?.text == "http://[::1]:8080/")
        #expect(RedirectTarget("com.example.app://login-callback")?.text == "com.example.app://login-callback")
        #expect(RedirectTarget("https://app.example.com/cb#x")?.withoutFragment == "https://app.example.com/cb")
        for refused in [
            "", "/relative", "//app.example.com/cb", "https:app.example.com", "https://", "https://user@app.example.com/",
            "https://app.example.com@evil.example/", "https://app.example.com\\@evil.example/", "https://app.example.com/a b",
            "https://app.example.com/\u{00e9}", "https://app.example.com:0/", "https://app.example.com:65536/", "https://app.example.com:+1/",
            "https://app.example.com/cb/../admin", "https://app.example.com/cb/%2E%2e/admin", "https://app.example.com/./x",
            "https://app..example.com/", "https://0x7f.0.0.1/", "https://127.1/", "java script:x", "1http://x/", "https://app.example.com/\t",
            "javascript:alert(1)", "JavaScript://x/%0Aalert(1)", "data:text/html,x", "file:///etc/passwd", "vbscript:x", "blob:https://a/b",
            String(repeating: "a", count: 2049)
        ] {
            #expect(RedirectTarget(refused) == nil, "\(refused)")
        }
    }

    @Test("GoTrue's order: site URL (any port on loopback), digits-only hosts, IP literals, host names, then the allow list")
    func rules() throws {
        let policy = RedirectPolicy(
            siteURL: try #require(RedirectTarget("https://app.example.com")),
            allowList: [try glob("http://localhost:3000/**"), try glob("https://*.example.org/cb"), try glob("myapp://*")])
        #expect(policy.allowed("https://app.example.com/anything?x=1")?.text == "https://app.example.com/anything?x=1")
        #expect(policy.allowed("https://APP.example.com./x")?.text == "https://app.example.com/x")
        #expect(policy.allowed("http://app.example.com/") == nil, "another scheme than the site URL's")
        #expect(policy.allowed("https://app.example.com:8443/") == nil, "another port than the site URL's")
        #expect(policy.allowed("http://localhost:3000/cb#frag") != nil)
        #expect(policy.allowed("http://localhost:3001/cb") == nil)
        #expect(policy.allowed("https://a.example.org/cb") != nil)
        #expect(policy.allowed("https://a.example.org/cb/x") == nil)
        #expect(policy.allowed("https://12345/") == nil)
        #expect(policy.allowed("http://127.0.0.1:9999/any") != nil, "a loopback address is always allowed (GoTrue)")
        #expect(policy.allowed("http://[::1]/any") != nil)
        #expect(policy.allowed("http://10.1.2.3/") == nil)
        #expect(policy.allowed("http://[2001:db8::1]/") == nil)
        #expect(policy.allowed("https://under_score.example.org/cb") == nil)
        #expect(policy.allowed("myapp://done") != nil)
        #expect(policy.allowed("myapp://done/more") == nil)
        #expect(policy.allowed("javascript:alert(1)") == nil)
        let anything = RedirectPolicy(siteURL: try #require(RedirectTarget("https://app.example.com")), allowList: [try glob("*"), try glob("**")])
        #expect(anything.allowed("javascript:alert(1)") == nil, "no allow-list entry lets a script scheme through")
        #expect(anything.allowed("data:text/html,x") == nil)
        #expect(policy.target(redirectTo: "https://evil.example/", referer: "http://localhost:3000/home").text == "http://localhost:3000/home")
        #expect(policy.target(redirectTo: nil, referer: "https://evil.example/").text == "https://app.example.com")
        // A site URL on loopback takes any port.
        let local = RedirectPolicy(siteURL: try #require(RedirectTarget("http://localhost:3000")), allowList: [])
        #expect(local.allowed("http://localhost:5173/cb") != nil)
    }
}
