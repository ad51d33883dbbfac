/// Where and how to reach Redis, parsed from `redis://[user:password@]host[:port][/db]`, or
/// `rediss://…` for TLS (with the trust settings of ``TLSClientConfiguration``).
///
/// `user` and `password` may be percent-encoded.
public struct RedisURL: Sendable, Hashable, CustomStringConvertible {
    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    /// TCP port, 6379 unless the URL says otherwise.
    public var port: Int
    /// ACL user for `AUTH user password`, or nil for `AUTH password` / no auth.
    public var username: String?
    /// Password for `AUTH`, or nil for no auth.
    public var password: String?
    /// Database index for `SELECT`.
    public var database: Int
    /// `rediss://`: every connection speaks TLS, and a server whose certificate does not verify is refused.
    public var tls: Bool

    /// Creates a URL from parts.
    public init(host: String, port: Int = 6379, username: String? = nil, password: String? = nil, database: Int = 0, tls: Bool = false) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses a `redis://` URL.
    /// - Throws: ``RedisError`` with code ``RedisError/Code/invalidConfiguration`` and a message saying what is wrong.
    public init(parsing text: String) throws {
        func invalid(_ reason: String) -> RedisError {
            RedisError(.invalidConfiguration, "invalid Redis URL \(Self.masked(text)): \(reason)")
        }
        guard let schemeEnd = text.firstRange(of: "://") else { throw invalid("expected redis://host:port/db") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "redis" || scheme == "rediss" else { throw invalid("the scheme must be redis:// or rediss:// (TLS)") }
        self.tls = scheme == "rediss"
        var rest = Substring(text[schemeEnd.upperBound...])
        // Credentials first, up to the last "@" (nothing after the host may hold one: the path is
        // a database number): a password may hold "?", "#" or "/", and no message below may quote
        // any part of it.
        var userInfo: Substring?
        if let at = rest.lastIndex(of: "@") {
            userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        if rest.contains(where: { $0 == "?" || $0 == "#" }) {
            throw invalid("query parameters and fragments are not supported")
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        let hostPort = rest
        if let userInfo {
            if let colon = userInfo.firstIndex(of: ":") {
                let user = try Self.percentDecoded(userInfo[..<colon]) ?? { throw invalid("bad percent-encoding in the user") }()
                let pass =
                    try Self.percentDecoded(userInfo[userInfo.index(after: colon)...])
                    ?? { throw invalid("bad percent-encoding in the password") }()
                self.username = user.isEmpty ? nil : user
                self.password = pass.isEmpty ? nil : pass
            } else {
                // `redis://secret@host` is the common password-only shorthand.
                let pass = try Self.percentDecoded(userInfo) ?? { throw invalid("bad percent-encoding in the password") }()
                self.username = nil
                self.password = pass.isEmpty ? nil : pass
            }
        } else {
            self.username = nil
            self.password = nil
        }
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("unclosed [ in an IPv6 host") }
            self.host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw invalid("junk after the IPv6 host") }
        } else if let colon = hostPort.lastIndex(of: ":") {
            self.host = String(hostPort[..<colon])
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            self.host = String(hostPort)
        }
        guard !host.isEmpty else { throw invalid("the host is empty") }
        if let portText {
            guard let port = DecimalInteger.parse(portText, in: 1...65535) else { throw invalid("the port must be 1-65535, got \"\(portText)\"") }
            self.port = port
        } else {
            self.port = 6379
        }
        if path.isEmpty {
            self.database = 0
        } else {
            guard let database = DecimalInteger.parse(path, in: 0...Int(Int32.max)) else {
                throw invalid("the database must be a number from 0 to \(Int32.max), got \"\(path)\"")
            }
            self.database = database
        }
    }

    /// The URL with any password replaced by `***`, safe to log.
    public var description: String {
        var text = tls ? "rediss://" : "redis://"
        // Always with the colon: `redis://name@host` would read back as a password-only URL.
        if username != nil || password != nil {
            text += Self.percentEncoded(username ?? "") + ":" + (password == nil ? "" : "***") + "@"
        }
        text += host.contains(":") ? "[\(host)]" : host
        return text + ":\(port)/\(database)"
    }

    /// A URL string for error messages about text that did not parse: everything before the last
    /// `@` after the scheme (user and password, whatever characters they hold) is shown as `***`.
    static func masked(_ text: String) -> String {
        guard let schemeEnd = text.firstRange(of: "://"), let at = text[schemeEnd.upperBound...].lastIndex(of: "@") else { return text }
        return String(text[..<schemeEnd.upperBound]) + "***" + String(text[at...])
    }

    /// `text` with every byte outside RFC 3986's unreserved set as `%XX`: reads back through
    /// ``percentDecoded(_:)`` unchanged, whatever the user name holds (`:`, `@`, `/`).
    private static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return encoded
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
