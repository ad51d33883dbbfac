import AuthGateCore
import AuthGateTestSupport
import Testing

@Suite("Request target normalization", .timeLimit(.minutes(3)))
struct RequestTargetTests {
    @Test(
        "dot segments, unreserved encodings and repeated slashes have one canonical form",
        arguments: [
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("/a/b/", "/a/b/"),
            ("/a/./b", "/a/b"),
            ("/a/b/..", "/a/"),
            ("/a/b/../", "/a/"),
            ("/a/b/.", "/a/b/"),
            ("/a/../b", "/b"),
            ("/a/%2e%2e/b", "/b"),
            ("/a/%2E%2E/b", "/b"),
            ("/a/.%2e/b", "/b"),
            ("/a/%2e/b", "/a/b"),
            ("/public/../api/admin/users", "/api/admin/users"),
            ("//auth/v1/signup", "/auth/v1/signup"),
            ("/auth//v1/signup", "/auth/v1/signup"),
            ("/auth/v1//signup//", "/auth/v1/signup/"),
            ("/%61%70%69", "/api"),
            ("/a%2db%5fc%7Ed%2E", "/a-b_c~d."),
            ("/a%3ab", "/a%3Ab"),
            ("/a%20b", "/a%20b"),
            ("/caf\u{e9}", "/caf%C3%A9"),
            ("/a|b{c}", "/a%7Cb%7Bc%7D"),
            ("/a;b=c/d", "/a;b=c/d"),
            ("/a..b/...", "/a..b/..."),
            ("/a/..", "/")
        ]
    )
    func canonicalPath(raw: String, expected: String) throws {
        let target = try RequestTarget.normalize(raw)
        #expect(target.path == expected)
        #expect(target.query == nil)
        #expect(try RequestTarget.normalize(target.uri) == target, "normalizing again changes nothing")
    }

    @Test(
        "targets that could be resolved differently upstream are refused",
        arguments: [
            ("/..", RequestTarget.Problem.aboveRoot),
            ("/a/../..", .aboveRoot),
            ("/%2e%2e/etc/passwd", .aboveRoot),
            ("/a/..%2fb", .encodedSeparator),
            ("/a%2Fb", .encodedSeparator),
            ("/a%5cb", .encodedSeparator),
            ("/a%00b", .encodedSeparator),
            ("/a\\b", .backslash),
            ("/a/..\\b", .backslash),
            ("/a/..;/b", .dotSegmentWithParameters),
            ("/a/.;x/b", .dotSegmentWithParameters),
            ("/a%zz", .invalidPercentEncoding),
            ("/a%2", .invalidPercentEncoding),
            ("/a%", .invalidPercentEncoding),
            ("/a#frag", .fragment),
            ("/a?b#c", .fragment),
            ("/a\u{01}b", .invalidCharacter),
            ("/a?b\u{7f}", .invalidCharacter),
            ("a/b", .notOriginForm),
            ("*", .notOriginForm),
            ("ftp://host/x", .notOriginForm),
            ("http:///x", .notOriginForm),
            ("http://us er@host/x", .notOriginForm)
        ]
    )
    func refused(raw: String, problem: RequestTarget.Problem) {
        #expect(throws: problem) { try RequestTarget.normalize(raw) }
    }

    @Test("the query is kept as sent; the absolute form names its authority")
    func queryAndAbsoluteForm() throws {
        let target = try RequestTarget.normalize("/a/./b?x=%2F..&y=/../")
        #expect(target.path == "/a/b" && target.query == "x=%2F..&y=/../")
        #expect(target.uri == "/a/b?x=%2F..&y=/../")
        let empty = try RequestTarget.normalize("/a?")
        #expect(empty.query == "" && empty.uri == "/a?")
        let absolute = try RequestTarget.normalize("HTTP://Example.com:8080/x/../y?z=1")
        #expect(absolute.authority == "Example.com:8080" && absolute.path == "/y" && absolute.query == "z=1")
        let bare = try RequestTarget.normalize("http://example.com")
        #expect(bare.authority == "example.com" && bare.path == "/")
    }

    @Test("a target over the limit is refused as too long")
    func tooLong() {
        #expect(throws: RequestTarget.Problem.tooLong) {
            try RequestTarget.normalize("/" + String(repeating: "a", count: RequestTarget.maximumLength))
        }
    }

    /// Found by the FuzzRequestTarget long run: a 3 KiB target of raw non-ASCII bytes normalized
    /// to a 9 KiB percent-encoded path, which was then forwarded although the same path, sent
    /// as it was normalized, is refused; the limit now holds for the normalized form too.
    @Test("a target whose normalized form is over the limit is refused as too long")
    func tooLongOnceNormalized() throws {
        let raw = "/" + String(repeating: "\u{FFFD}", count: RequestTarget.maximumLength / 6)
        #expect(raw.utf8.count < RequestTarget.maximumLength)
        #expect(throws: RequestTarget.Problem.tooLong) { try RequestTarget.normalize(raw) }
        let fits = "/" + String(repeating: "\u{FFFD}", count: RequestTarget.maximumLength / 10)
        let normalized = try RequestTarget.normalize(fits)
        #expect(try RequestTarget.normalize(normalized.uri).path == normalized.path)
    }

    @Test("random targets: normalizing is idempotent and never leaves a dot or empty segment")
    func randomTargets() {
        var generator = SeededGenerator(seed: 0x5eed)
        let pieces = [
            "a", "b", ".", "..", "%2e", "%2E", "%2e%2e", "/", "//", "%41", "%7e", "%2f", "%5C", ";", "..;", "~", "%", "%g1", "?", "#", "\\", "é", " ",
            "%20"
        ]
        for _ in 0..<20_000 {
            var raw = "/"
            for _ in 0..<Int.random(in: 0...12, using: &generator) { raw += pieces.randomElement(using: &generator)! }
            guard let target = try? RequestTarget.normalize(raw) else { continue }
            #expect(target.path.hasPrefix("/"))
            let segments = target.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            for (index, segment) in segments.enumerated() {
                #expect(segment != "." && segment != "..", "\(raw) gave \(target.path)")
                #expect(!segment.isEmpty || index == segments.count - 1, "\(raw) gave an empty segment in \(target.path)")
            }
            #expect((try? RequestTarget.normalize(target.uri)) == target, "\(raw) is not a fixed point")
        }
    }

    @Test(
        "hosts compare in one form: lower case, no port, no trailing dot; malformed ones are refused",
        arguments: [
            ("API.Example.com", "api.example.com"), ("api.example.com:443", "api.example.com"), ("api.example.com.", "api.example.com"),
            ("[::1]:8080", "[::1]"), ("127.0.0.1:80", "127.0.0.1"), ("host:1", "host"), ("host:65535", "host"), ("[0:0::01]:443", "[::1]"),
            ("[2001:DB8:0:0:0:0:0:1]", "[2001:db8::1]"), ("[::FFFF:1.2.3.4]", "[::ffff:1.2.3.4]"), ("10.0.0.5.", "10.0.0.5"), ("0.0.0.0", "0.0.0.0"),
            ("255.255.255.255", "255.255.255.255"), ("1.2.3.4.example", "1.2.3.4.example"), ("a1.b2", "a1.b2"), ("0x.example", "0x.example")
        ]
    )
    func canonicalHost(raw: String, expected: String) {
        #expect(HostName.canonical(raw) == expected)
    }

    /// The empty-label cases were found by the FuzzRequestTarget target: `a..` was `a.`, whose
    /// canonical form was `a`, so one host had two "canonical" spellings.
    @Test(
        "malformed hosts, empty labels included",
        arguments: [
            "", "a b", "user@host", "host/x", "host:", "host:123456", "[::1", "a,b", "host:8a", ".", "..", ".a", "a..b", "a..", "...:80",
            "API..example.com.",
            // A second spelling of a port: zero, a leading zero, out of range.
            "host:0", "host:080", "host:00443", "host:65536", "host:99999",
            // A second spelling of an IPv4 address (what resolvers and browsers read as one).
            "127.1", "0x7f.0.0.1", "0X7F.0.0.1", "2130706433", "127.000.0.1", "0177.0.0.1", "127.0.0.256", "1.2.3.4.5", "a.1", "example.0x1f",
            "1.2.3.",
            // Not an IPv6 address.
            "[]", "[::1::]", "[1:2:3:4:5:6:7:8:9]", "[1.2.3.4]", "[:::]", "[12345::]", "[::1]x", "[::1]:", "[::1]:0"
        ])
    func invalidHost(raw: String) {
        #expect(HostName.canonical(raw) == nil)
    }

    /// The byte-level canonicalization against the rules written out with strings: validity, the
    /// host before the port, one root dot dropped, no empty label, lower case.
    @Test("random hosts get the canonical form the rules give, spelled with strings")
    func randomHosts() {
        func expected(_ raw: String) -> String? {
            guard HostName.isValidAuthority(Array(raw.utf8)[...]) else { return nil }
            if raw.hasPrefix("[") {
                guard let close = raw.firstIndex(of: "]"), let address = IPNetwork.parseAddress(String(raw[...close])), address.count == 16,
                    let text = IPNetwork.text(of: address)
                else { return nil }
                return "[\(text)]"
            }
            var host = String(raw.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0])
            if host.hasSuffix(".") { host.removeLast() }
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            guard !host.isEmpty, !labels.contains("") else { return nil }
            let last = labels[labels.count - 1].lowercased()
            if last.allSatisfy(\.isNumber) || (last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit)) {
                // A number: only dotted decimal, each part as Int prints it.
                guard labels.count == 4, labels.allSatisfy({ label in Int(label).map { (0...255).contains($0) && String($0) == label } ?? false })
                else { return nil }
            }
            return host.lowercased()
        }
        var generator = SeededGenerator(seed: 0x4057)
        let pieces = [
            "a", "Z", "0", "9", ".", "..", "-", "_", "~", ":", ":80", ":123456", "[", "]", "[::1]", "[AB:cd]", "@", ",", " ", "é", "%41", "EXAMPLE",
            "com", ":0", ":08", ":65535", ":65536", "0x", "0X1f", "1", "255", "256", "010", "[0:0::1]", "[::FFFF:1.2.3.4]", "[1.2.3.4]"
        ]
        var accepted = 0
        for _ in 0..<20_000 {
            var raw = ""
            for _ in 0..<Int.random(in: 0...8, using: &generator) { raw += pieces.randomElement(using: &generator)! }
            let host = HostName.canonical(raw)
            #expect(host == expected(raw), "\(raw.debugDescription)")
            if let host {
                accepted += 1
                #expect(HostName.canonical(host) == host, "\(raw.debugDescription) gave \(host.debugDescription), not a fixed point")
            }
        }
        #expect(accepted > 1_000)
    }
}
