/// The cookie that ties an implicit sign-in flow to the browser that started it (RFC 9700 §4.7.1;
/// GoTrue sets none): `/authorize` sets a random value under a name made from the flow's `state`
/// and stores the value's SHA-256 with the flow; `/callback` finds the flow, and the session goes
/// to the browser only when that browser sends the value back. So a callback URL someone made by
/// signing in with their own account cannot sign another person's browser in as them (login CSRF).
/// PKCE flows need no cookie: the app's verifier does that work.
public enum FlowCookie {
    /// `authgate-flow-<state>`: one cookie per flow, so flows in two tabs do not overwrite each other.
    public static func name(state: String) -> String { "authgate-flow-" + state }

    /// The `Set-Cookie` value for a new flow: sent back only to the callback's path, for the flow's
    /// lifetime, never to scripts. Over `https` it is `SameSite=None; Secure`, since Apple posts
    /// its answer from its own site (a `Lax` cookie is not sent with a cross-site `POST`); over
    /// `http` (development; Apple takes only `https` return URLs) `SameSite=Lax`.
    public static func setting(state: String, value: String, callbackURL: String, lifetime: Duration) -> String {
        name(state: state) + "=" + value + "; Path=" + path(of: callbackURL) + "; Max-Age=" + String(Int(lifetime.inSeconds))
            + attributes(callbackURL)
    }

    /// The `Set-Cookie` value that removes a flow's cookie once its callback came.
    public static func clearing(state: String, callbackURL: String) -> String {
        name(state: state) + "=; Path=" + path(of: callbackURL) + "; Max-Age=0" + attributes(callbackURL)
    }

    private static func attributes(_ callbackURL: String) -> String {
        callbackURL.hasPrefix("https://") ? "; HttpOnly; Secure; SameSite=None" : "; HttpOnly; SameSite=Lax"
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
            for pair in field.utf8.split(separator: UInt8(ascii: ";")) {
                let trimmed = pair.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
                guard let equals = trimmed.firstIndex(of: UInt8(ascii: "=")), trimmed[..<equals].elementsEqual(name.utf8) else { continue }
                values.append(Array(trimmed[trimmed.index(after: equals)...].prefix { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }))
            }
        }
        return values
    }
}
