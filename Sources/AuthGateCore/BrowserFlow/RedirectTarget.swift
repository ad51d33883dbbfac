/// A `redirect_to` URL in its one canonical form, parsed strictly: the scheme and the host in
/// lower case, the host as ``HostName`` writes it, a default port (`:443` for `https`, `:80` for
/// `http`) left out, the rest as sent. Refused outright: anything but printable ASCII, a
/// backslash or a character no URL may hold unencoded, user information (`https://a@b/`), an
/// empty or invalid host, a port outside 1-65535, `.` or `..` path segments (encoded ones too),
/// which browsers resolve away after an allow list has matched the text, and schemes that run
/// or read something (`javascript:`, `data:`, `file:`, …). The allow list,
/// the site URL rule and the browser all see this one text.
public struct RedirectTarget: Sendable, Hashable {
    /// Lower-case scheme (`https`, `http`, `com.example.app`).
    public let scheme: String
    /// The canonical host, when the URL has an authority (`scheme://host…`).
    public let host: String?
    /// An explicit port other than the scheme's default.
    public let port: Int?
    /// The whole canonical URL.
    public let text: String
    /// Where the fragment starts in ``text`` (its `#`), if it has one.
    private let fragmentStart: String.Index?

    /// The longest URL accepted.
    public static let maximumBytes = 2048

    /// The URL without its fragment: what allow-list entries are matched against.
    public var withoutFragment: Substring { text[..<(fragmentStart ?? text.endIndex)] }

    /// `http://localhost:3000`: where a development site runs, the site URL until one is set.
    public static let localDevelopment = RedirectTarget(scheme: "http", host: "localhost", port: 3000, text: "http://localhost:3000")

    private init(scheme: String, host: String?, port: Int?, text: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.text = text
        self.fragmentStart = text.firstIndex(of: "#")
    }

    /// Parses `text`; nil when it is not a URL this gateway will send a browser to.
    public init?(_ input: String) {
        let bytes = Array(input.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maximumBytes, bytes.allSatisfy(Self.isAllowed) else { return nil }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, Self.isSchemeStart(bytes[0]),
            bytes[1..<colon].allSatisfy(Self.isSchemeByte)
        else { return nil }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard !Self.refusedSchemes.contains(scheme) else { return nil }
        var rest = bytes[(colon + 1)...]
        var host: String?
        var port: Int?
        var authorityText = ""
        if rest.starts(with: Array("//".utf8)) {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
            let authority = rest[rest.startIndex..<end]
            guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")), HostName.isValidAuthority(authority),
                let canonical = HostName.canonical(String(decoding: authority, as: UTF8.self))
            else { return nil }
            // The port, after the host's last colon outside an IPv6 literal's brackets.
            let portStart: Int?
            if let close = authority.lastIndex(of: UInt8(ascii: "]")) {
                portStart = authority[close...].firstIndex(of: UInt8(ascii: ":"))
            } else {
                portStart = authority.firstIndex(of: UInt8(ascii: ":"))
            }
            if let portStart {
                let digits = authority[(portStart + 1)...]
                guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                    let value = Int(String(decoding: digits, as: UTF8.self)), (1...65_535).contains(value)
                else { return nil }
                let isDefault = (scheme == "https" && value == 443) || (scheme == "http" && value == 80)
                port = isDefault ? nil : value
            }
            host = canonical
            authorityText = "//" + canonical + (port.map { ":\($0)" } ?? "")
            rest = rest[end...]
        } else if scheme == "http" || scheme == "https" {
            return nil
        }
        guard !Self.hasDotSegment(rest) else { return nil }
        let remainder = String(decoding: rest, as: UTF8.self)
        self.init(scheme: scheme, host: host, port: port, text: scheme + ":" + authorityText + remainder)
    }

    /// Schemes that run or read something where they are opened instead of going somewhere: never
    /// a place to send a browser with a session or a code, whatever an allow-list entry matches.
    static let refusedSchemes: Set<String> = ["javascript", "vbscript", "data", "file", "blob", "about", "filesystem", "view-source"]

    /// Printable ASCII without space, `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`.
    static func isAllowed(_ byte: UInt8) -> Bool {
        guard (0x21...0x7E).contains(byte) else { return false }
        return !Array("\"<>\\^`{|}".utf8).contains(byte)
    }

    private static func isSchemeStart(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isSchemeStart(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }

    /// Whether the path (before `?` or `#`) has a `.` or `..` segment, spelled or percent-encoded.
    static func hasDotSegment(_ bytes: ArraySlice<UInt8>) -> Bool {
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        for segment in bytes[bytes.startIndex..<end].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            let decoded = (try? FormFields.decode(segment.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "x") : $0 })) ?? "x"
            if decoded == "." || decoded == ".." { return true }
        }
        return false
    }

    /// Whether the host names this machine: `localhost`, a `127.x.x.x` address, `[::1]`, `0.0.0.0`, `[::]`.
    public var isLoopback: Bool {
        guard let host else { return false }
        return host == "localhost" || host == "[::1]" || host == "0.0.0.0" || host == "[::]" || (isIPv4 && host.hasPrefix("127."))
    }

    /// Whether the host is an IP address (dotted IPv4 or a bracketed IPv6 literal).
    public var isIPAddress: Bool { isIPv4 || host?.hasPrefix("[") == true }

    private var isIPv4: Bool {
        guard let host else { return false }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }
    }
}
