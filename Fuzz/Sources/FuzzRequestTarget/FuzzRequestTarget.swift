import AuthGateCore
import AuthGateHTTP
import FuzzSupport

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzRequestTarget_main")
public func fuzzRequestTargetMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzRequestTarget(data, size) }
}

/// The request-target normalizer, the host canonicalizer and the route matcher: the first field
/// is a request target, the second a `Host` value, the third a method.
/// Properties: never a trap; normalizing is idempotent (targets, hosts, origins); an accepted
/// host's port is 1-65535 without a leading zero; a normalized path starts with `/`, has no
/// empty, `.` or `..` segment, no `\`, no raw byte a path may not hold, and no percent-encoded
/// unreserved character or lower-case hex digit; a matched route's prefix is a segment prefix of
/// the normalized path; a path forwarded to an upstream has no dot segment either.
public func fuzzRequestTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let raw = input.text()
    let hostValue = input.text()
    let method = input.text()
    if let host = HostName.canonical(hostValue) {
        fuzzCheck(
            HostName.canonical(host) == host, "host canonicalization is not idempotent: \(hostValue.debugDescription) -> \(host.debugDescription)")
        fuzzCheck(host == host.lowercased() && !host.hasSuffix("."), "a host kept upper case or its trailing dot: \(host.debugDescription)")
        // The port of an accepted value is in its one spelling: 1-65535, no leading zero.
        let afterHost =
            hostValue.hasPrefix("[") ? hostValue.split(separator: "]", maxSplits: 1).dropFirst().first ?? "" : hostValue.drop { $0 != ":" }[...]
        if let port = afterHost.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first {
            fuzzCheck(
                port.first != "0" && port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) && Int(port).map { (1...65_535).contains($0) } == true,
                "a port with a second spelling was accepted: \(hostValue.debugDescription)")
        }
    }
    if let origin = ServerConfiguration.canonicalOrigin(hostValue) {
        fuzzCheck(
            ServerConfiguration.canonicalOrigin(origin) == origin,
            "origin canonicalization is not idempotent: \(hostValue.debugDescription) -> \(origin.debugDescription)")
    }
    guard let target = try? RequestTarget.normalize(raw) else { return 0 }
    checkCanonical(target.path, from: raw)
    guard let again = try? RequestTarget.normalize(target.uri) else {
        fuzzCheck(false, "a normalized target is refused when normalized again: \(target.uri.debugDescription) from \(raw.debugDescription)")
        return 0
    }
    fuzzCheck(
        again.path == target.path && again.query == target.query && again.authority == nil,
        "normalizing is not idempotent: \(raw.debugDescription) -> \(target.uri.debugDescription) -> \(again.uri.debugDescription)")
    let host = HostName.canonical(hostValue)
    guard let route = RequestTargetFixture.table.match(host: host, path: target.path, method: method) else { return 0 }
    let prefix = route.configuration.pathPrefix
    fuzzCheck(target.path.hasPrefix(prefix), "route \(route.configuration.name) with prefix \(prefix) matched \(target.path.debugDescription)")
    if !prefix.hasSuffix("/"), target.path.utf8.count > prefix.utf8.count {
        fuzzCheck(target.path.dropFirst(prefix.count).first == "/", "prefix \(prefix) matched inside a segment of \(target.path.debugDescription)")
    }
    for upstream in route.configuration.upstreams {
        let forwarded = RouteTable.upstreamPath(for: target.path, route: route.configuration, upstream: upstream)
        fuzzCheck(forwarded.hasPrefix("/"), "forwarded path \(forwarded.debugDescription) does not start with /")
        let segments = forwarded.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        fuzzCheck(!segments.contains(".") && !segments.contains(".."), "forwarded path \(forwarded.debugDescription) has a dot segment")
    }
    return 0
}

/// Checks the one canonical form of a normalized path.
private func checkCanonical(_ path: String, from raw: String) {
    let bytes = Array(path.utf8)
    fuzzCheck(bytes.first == UInt8(ascii: "/"), "normalized path \(path.debugDescription) does not start with /")
    let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    for (index, segment) in segments.enumerated() {
        fuzzCheck(segment != "." && segment != "..", "normalized \(raw.debugDescription) to \(path.debugDescription), which has a dot segment")
        fuzzCheck(
            !segment.isEmpty || index == segments.count - 1,
            "normalized \(raw.debugDescription) to \(path.debugDescription), which has an empty segment")
    }
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        fuzzCheck(byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\"), "normalized path \(path.debugDescription) holds byte \(byte)")
        fuzzCheck(!"\"<>[]^{|}`".utf8.contains(byte), "normalized path \(path.debugDescription) holds a raw \(Character(Unicode.Scalar(byte)))")
        if byte == UInt8(ascii: "%") {
            fuzzCheck(index + 2 < bytes.count, "normalized path \(path.debugDescription) ends in a partial percent-encoding")
            let high = bytes[index + 1]
            let low = bytes[index + 2]
            fuzzCheck(
                isUpperHex(high) && isUpperHex(low), "normalized path \(path.debugDescription) has a percent-encoding that is not upper-case hex")
            let decoded = hexValue(high) << 4 | hexValue(low)
            fuzzCheck(!RequestTarget.isUnreserved(decoded), "normalized path \(path.debugDescription) still encodes unreserved byte \(decoded)")
            fuzzCheck(
                decoded != UInt8(ascii: "/") && decoded != UInt8(ascii: "\\") && decoded != 0,
                "normalized path \(path.debugDescription) encodes a separator or NUL")
            index += 3
        } else {
            index += 1
        }
    }
}

private func isUpperHex(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
}

private func hexValue(_ byte: UInt8) -> UInt8 {
    byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : byte - UInt8(ascii: "A") + 10
}

/// The routes the matcher is fuzzed against: nested prefixes, a trailing-slash prefix, a host
/// route, a method-limited route and `strip_prefix` with and without an upstream base path.
enum RequestTargetFixture {
    static let yaml = """
        routes:
          - { name: api, path_prefix: /api, upstreams: ["http://127.0.0.1:9001"], auth: required }
          - { name: admin, path_prefix: /api/admin, upstreams: ["http://127.0.0.1:9002"], auth: required }
          - { name: public, path_prefix: /public/, upstreams: ["http://127.0.0.1:9003/base"], auth: public, strip_prefix: true }
          - { name: stripped, path_prefix: /s, upstreams: ["http://127.0.0.1:9004"], auth: optional, strip_prefix: true }
          - { name: hosted, host: api.example.com, path_prefix: /, upstreams: ["http://127.0.0.1:9005"], auth: public }
          - { name: writes, path_prefix: /w, methods: [POST, PUT], upstreams: ["http://127.0.0.1:9006/w2"], auth: public }
        """

    static let table: RouteTable = {
        do {
            return RouteTable(try AuthGateConfiguration.parse(yaml: yaml, baseDirectory: "", environment: [:]).routes)
        } catch {
            fatalError("the fuzz routes do not parse: \(error)")
        }
    }()
}
