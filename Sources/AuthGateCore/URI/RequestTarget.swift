/// A request target in the one form AuthGate decides on and forwards (RFC 3986 §6.2.2 and §5.2.4).
///
/// Every request head is normalized once, before anything is matched, counted or forwarded:
/// - percent-encodings of unreserved characters are decoded (`%61` is `a`, `%2E` is `.`), every
///   other percent-encoding is kept with upper-case hex digits;
/// - characters a path may not hold raw (`"<>[]^{|}` and bytes over 0x7F) are percent-encoded;
/// - empty segments are merged (`//` is `/`, as nginx's `merge_slashes` and Envoy's
///   `merge_slashes` do), a trailing `/` is kept;
/// - `.` and `..` segments are removed; a `..` that would climb above the root is refused.
///
/// Refused with 400: an encoded `/` (`%2F`), `\` (`%5C`) or NUL (`%00`) in the path, a raw `\`,
/// a control character, a malformed percent-encoding, a fragment, a segment that is `.` or `..`
/// followed by `;` parameters (servlet containers resolve `..;` as `..`), and a target that is not
/// in origin form (`/path`) or absolute form (`http://host/path`). The query is kept as sent (it
/// decides nothing), but may not hold control characters or a fragment.
///
/// The normalized form is a fixed point: normalizing it again gives it back unchanged.
public struct RequestTarget: Sendable, Hashable, CustomStringConvertible {
    /// The normalized path: starts with `/`, holds no `.`, `..` or empty segment.
    public let path: String
    /// The query without its `?`, as sent; nil when the target had none.
    public let query: String?
    /// The authority of an absolute-form target (`http://host/x` names `host`), which takes the
    /// place of `Host` (RFC 9112 §3.2.2); nil for origin form.
    public let authority: String?

    /// The longest target accepted (the request line's limit in nginx's default buffers).
    public static let maximumLength = 8 << 10

    /// Why a target was refused.
    public enum Problem: String, Error, Sendable, CustomStringConvertible {
        case tooLong = "target_too_long"
        case notOriginForm = "target_not_origin_form"
        case invalidCharacter = "invalid_character"
        case invalidPercentEncoding = "invalid_percent_encoding"
        case encodedSeparator = "encoded_separator"
        case backslash = "backslash"
        case fragment = "fragment"
        case aboveRoot = "dot_segment_above_root"
        case dotSegmentWithParameters = "dot_segment_with_parameters"

        public var description: String { rawValue }
    }

    /// The target as forwarded: the path, then `?` and the query when there is one.
    public var uri: String { query.map { path + "?" + $0 } ?? path }

    public var description: String { uri }

    /// Normalizes a request target as it appeared on the request line.
    /// - Throws: ``Problem`` when the target must be refused.
    public static func normalize(_ raw: String) throws(Problem) -> RequestTarget {
        if let canonical = alreadyCanonical(raw) { return canonical }
        var bytes = Array(raw.utf8)
        guard bytes.count <= maximumLength else { throw .tooLong }
        var authority: String?
        if bytes.first != UInt8(ascii: "/") {
            guard let (host, rest) = splitAbsoluteForm(bytes) else { throw .notOriginForm }
            authority = host
            bytes = rest
        }
        var pathEnd = bytes.count
        var query: String?
        if let question = bytes.firstIndex(of: UInt8(ascii: "?")) {
            pathEnd = question
            let queryBytes = bytes[(question + 1)...]
            for byte in queryBytes where byte < 0x21 || byte == 0x7F || byte == UInt8(ascii: "#") {
                throw byte == UInt8(ascii: "#") ? .fragment : .invalidCharacter
            }
            query = String(decoding: queryBytes, as: UTF8.self)
        }
        let path = try normalizePath(bytes[..<pathEnd])
        let target = RequestTarget(path: path, query: query, authority: authority)
        // The limit holds for what is decided on and forwarded, not only for what arrived:
        // percent-encoding raw bytes can make a target up to three times longer.
        guard target.uri.utf8.count <= maximumLength else { throw .tooLong }
        return target
    }

    /// The target itself when it is already in normalized form (the common case: no
    /// percent-encoding, no dot or empty segment, only characters a path may hold raw), found
    /// in one pass without allocating; nil when the full normalization must run.
    private static func alreadyCanonical(_ raw: String) -> RequestTarget? {
        let bytes = raw.utf8
        guard bytes.count <= maximumLength, bytes.first == UInt8(ascii: "/") else { return nil }
        var previous = UInt8(ascii: "/")
        var segmentLength = 0
        var dots = 0
        var queryStart: String.Index?
        for index in bytes.indices {
            let byte = bytes[index]
            if byte == UInt8(ascii: "?") {
                queryStart = index
                break
            }
            if byte == UInt8(ascii: "/") {
                if index != bytes.startIndex {
                    // An empty segment ("//"), or one that is "." or "..".
                    if previous == UInt8(ascii: "/") || (segmentLength > 0 && dots == segmentLength && segmentLength <= 2) { return nil }
                }
                segmentLength = 0
                dots = 0
                previous = byte
                continue
            }
            guard isUnreserved(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "@") || (isSubDelimiter(byte) && byte != UInt8(ascii: ";"))
            else {
                return nil
            }
            segmentLength += 1
            if byte == UInt8(ascii: ".") { dots += 1 }
            previous = byte
        }
        if segmentLength > 0, dots == segmentLength, segmentLength <= 2 { return nil }
        guard let queryStart else { return RequestTarget(path: raw, query: nil, authority: nil) }
        let query = raw[raw.utf8.index(after: queryStart)...]
        for byte in query.utf8 where byte < 0x21 || byte == 0x7F || byte == UInt8(ascii: "#") { return nil }
        return RequestTarget(path: String(raw[..<queryStart]), query: String(query), authority: nil)
    }

    /// `http://authority/rest` or `https://…` (scheme case-insensitive): the authority and the rest
    /// of the target (`/` when the path is empty). Nil for anything else.
    private static func splitAbsoluteForm(_ bytes: [UInt8]) -> (String, [UInt8])? {
        let lowered = bytes.prefix(8).map { $0 | 0x20 }
        let schemeLength: Int
        if lowered.starts(with: Array("http://".utf8)) {
            schemeLength = 7
        } else if lowered.starts(with: Array("https://".utf8)) {
            schemeLength = 8
        } else {
            return nil
        }
        let afterScheme = bytes[schemeLength...]
        let end = afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        let host = bytes[schemeLength..<end]
        guard !host.isEmpty, HostName.isValidAuthority(host) else { return nil }
        var rest = Array(bytes[end...])
        if rest.first != UInt8(ascii: "/") { rest.insert(UInt8(ascii: "/"), at: 0) }
        return (String(decoding: host, as: UTF8.self), rest)
    }

    /// Decodes, checks and canonicalizes the path's bytes, then removes dot segments.
    private static func normalizePath(_ raw: ArraySlice<UInt8>) throws(Problem) -> String {
        var segments: [[UInt8]] = []
        var endsWithSlash = false
        // Past the leading "/": raw segments between slashes, each decoded before it is pushed.
        for rawSegment in raw.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            let segment = try decodeSegment(rawSegment)
            try push(segment, into: &segments)
            // A final empty, "." or ".." segment leaves a directory: "/a/b/.." is "/a/".
            endsWithSlash = segment.isEmpty || segment == [UInt8(ascii: ".")] || segment == [UInt8(ascii: "."), UInt8(ascii: ".")]
        }
        var path: [UInt8] = [UInt8(ascii: "/")]
        for (offset, segment) in segments.enumerated() {
            if offset > 0 { path.append(UInt8(ascii: "/")) }
            path.append(contentsOf: segment)
        }
        if endsWithSlash, !segments.isEmpty { path.append(UInt8(ascii: "/")) }
        return String(decoding: path, as: UTF8.self)
    }

    /// One segment's bytes in canonical form: unreserved characters decoded, other encodings kept
    /// upper-case, characters not allowed raw encoded.
    private static func decodeSegment(_ raw: ArraySlice<UInt8>) throws(Problem) -> [UInt8] {
        var segment: [UInt8] = []
        segment.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            index += 1
            switch byte {
            case UInt8(ascii: "%"):
                guard index + 1 < raw.endIndex, let high = Base64URL.hexValue(raw[index]), let low = Base64URL.hexValue(raw[index + 1]) else {
                    throw .invalidPercentEncoding
                }
                index += 2
                let decoded = high << 4 | low
                if decoded == UInt8(ascii: "/") || decoded == UInt8(ascii: "\\") || decoded == 0 { throw .encodedSeparator }
                if isUnreserved(decoded) {
                    segment.append(decoded)
                } else {
                    appendEncoded(decoded, to: &segment)
                }
            case UInt8(ascii: "\\"):
                throw .backslash
            case UInt8(ascii: "#"):
                throw .fragment
            case 0..<0x21, 0x7F:
                throw .invalidCharacter
            default:
                if isUnreserved(byte) || isSubDelimiter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "@") {
                    segment.append(byte)
                } else {
                    // `"<>[]^`{|}` and bytes over 0x7F: not allowed raw in a path, same meaning encoded.
                    appendEncoded(byte, to: &segment)
                }
            }
        }
        return segment
    }

    /// Adds a decoded segment: an empty one is merged away, `.` is dropped, `..` removes the last
    /// segment (refused above the root).
    private static func push(_ segment: [UInt8], into segments: inout [[UInt8]]) throws(Problem) {
        if segment.isEmpty { return }
        if segment == [UInt8(ascii: ".")] { return }
        if segment == [UInt8(ascii: "."), UInt8(ascii: ".")] {
            guard !segments.isEmpty else { throw .aboveRoot }
            segments.removeLast()
            return
        }
        if let semicolon = segment.firstIndex(of: UInt8(ascii: ";")) {
            let name = segment[..<semicolon]
            if name.elementsEqual([UInt8(ascii: ".")]) || name.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                throw .dotSegmentWithParameters
            }
        }
        segments.append(segment)
    }

    private static func appendEncoded(_ byte: UInt8, to bytes: inout [UInt8]) {
        let digits = Array("0123456789ABCDEF".utf8)
        bytes.append(UInt8(ascii: "%"))
        bytes.append(digits[Int(byte >> 4)])
        bytes.append(digits[Int(byte & 0x0F)])
    }

    /// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// RFC 3986 sub-delims: `!$&'()*+,;=`.
    public static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}
