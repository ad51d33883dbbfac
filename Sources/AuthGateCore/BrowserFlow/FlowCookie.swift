/// The cookie that ties an implicit sign-in flow to the browser that started it (RFC 9700 §4.7.1;
/// GoTrue sets none): `/authorize` sets a random value under a name made from the flow's `state`
/// and stores the value's SHA-256 with the flow; `/callback` finds the flow, and the session goes
/// to the browser only when that browser sends the value back. So a callback URL someone made by
/// signing in with their own account cannot sign another person's browser in as them (login CSRF).
/// PKCE flows need no cookie: the app's verifier does that work.
///
/// Over `https` the name has the `__Host-` prefix (RFC 6265bis §4.1.3.2): a browser takes such a
/// cookie only from the gateway's own host, `Secure`, with `Path=/` and no `Domain`, so a sibling
/// subdomain cannot plant one (cookie tossing) to pass its own flow off as the victim's. The
/// proxy drops these cookies from what it forwards (``isFlowCookie(_:)``).
public enum FlowCookie {
    /// The prefix of every flow cookie's name over `http` (development), after `__Host-` over `https`.
    static let baseName = "authgate-flow-"
    /// The prefix of every flow cookie's name over `https`.
    static let hostName = "__Host-" + baseName

    /// `__Host-authgate-flow-<state>` for an `https` callback, `authgate-flow-<state>` for an
    /// `http` one: one cookie per flow, so flows in two tabs do not overwrite each other.
    public static func name(state: String, callbackURL: String) -> String {
        (isSecure(callbackURL) ? hostName : baseName) + state
    }

    /// The `Set-Cookie` value for a new flow: for the flow's lifetime, never to scripts. Over
    /// `https` it is `__Host-` with `Path=/` and `SameSite=None; Secure`, since Apple posts its
    /// answer from its own site (a `Lax` cookie is not sent with a cross-site `POST`); over `http`
    /// (development; Apple takes only `https` return URLs) it is sent only to the callback's path,
    /// `SameSite=Lax`.
    public static func setting(state: String, value: String, callbackURL: String, lifetime: Duration) -> String {
        name(state: state, callbackURL: callbackURL) + "=" + value + attributes(callbackURL) + "; Max-Age=" + String(Int(lifetime.inSeconds))
    }

    /// The `Set-Cookie` value that removes a flow's cookie once its callback came.
    public static func clearing(state: String, callbackURL: String) -> String {
        name(state: state, callbackURL: callbackURL) + "=" + attributes(callbackURL) + "; Max-Age=0"
    }

    private static func attributes(_ callbackURL: String) -> String {
        isSecure(callbackURL) ? "; Path=/; HttpOnly; Secure; SameSite=None" : "; Path=" + path(of: callbackURL) + "; HttpOnly; SameSite=Lax"
    }

    private static func isSecure(_ callbackURL: String) -> Bool {
        callbackURL.utf8.starts(with: "https://".utf8)
    }

    /// Whether a `Cookie` pair's name (`name=value`, spaces before it allowed) is a flow cookie's,
    /// under either spelling: the gateway's own, never an upstream's business.
    public static func isFlowCookie(_ pair: some Collection<UInt8>) -> Bool {
        let name = pair.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        return name.starts(with: baseName.utf8) || name.starts(with: hostName.utf8)
    }

    /// The `name=value` pairs of one `Cookie` field (RFC 6265 §5.4: separated by `;`), each
    /// without the spaces and tabs before it, as bytes (a pair of spaces alone comes back empty).
    package static func pairs(in field: String) -> [Substring.UTF8View] {
        field.utf8.split(separator: UInt8(ascii: ";")).map { $0.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") } }
    }

    /// The path of `url` (an `http(s)` URL as configuration checks it), `/` when it has none.
    static func path(of url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return "/" }
        let rest = url[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        let path = rest[slash...]
        return String(path[..<(path.firstIndex(of: "?") ?? path.endIndex)])
    }

    /// The values of the cookies named `name` in `Cookie` header fields (RFC 6265 §5.4:
    /// `name=value` pairs separated by `;`; HTTP/2 may split them over several fields), read as
    /// bytes: a name matches byte for byte.
    public static func values(named name: String, in fields: [String]) -> [[UInt8]] {
        var values: [[UInt8]] = []
        for field in fields {
            for pair in pairs(in: field) {
                guard let equals = pair.firstIndex(of: UInt8(ascii: "=")), pair[..<equals].elementsEqual(name.utf8) else { continue }
                values.append(Array(pair[pair.index(after: equals)...].prefix { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }))
            }
        }
        return values
    }
}
