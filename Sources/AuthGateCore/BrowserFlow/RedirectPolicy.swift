/// Where a browser flow may send the browser back to: GoTrue's `redirect_to` rules
/// (`internal/utilities/request.go` `IsRedirectURLValid`), decided on the canonical
/// ``RedirectTarget`` in this order, the first decision winning:
/// 1. not a URL ``RedirectTarget`` accepts: refused;
/// 2. the site URL's scheme and host, and its port (any port on a loopback host): allowed;
/// 3. a host of digits only: refused;
/// 4. an IP address: allowed only when it is loopback;
/// 5. `http`/`https` with a host outside `[a-z0-9]([a-z0-9.-]*[a-z0-9])?`: refused;
/// 6. an allow-list entry (``RedirectGlob``) matching the URL without its fragment: allowed;
/// 7. anything else: refused.
public struct RedirectPolicy: Sendable {
    /// Where the browser goes when nothing else is allowed (`browser_flow.site_url`).
    public let siteURL: RedirectTarget
    /// `browser_flow.redirect_urls`.
    public let allowList: [RedirectGlob]

    public init(siteURL: RedirectTarget, allowList: [RedirectGlob]) {
        self.siteURL = siteURL
        self.allowList = allowList
    }

    /// The canonical form of `candidate` when the rules allow it.
    public func allowed(_ candidate: String?) -> RedirectTarget? {
        guard let candidate, let target = RedirectTarget(candidate) else { return nil }
        if target.scheme == siteURL.scheme, let host = target.host, host == siteURL.host,
            target.port == siteURL.port || target.isLoopback
        {
            return target
        }
        if let host = target.host {
            if host.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) { return nil }
            if target.isIPAddress { return target.isLoopback ? target : nil }
            if target.scheme == "http" || target.scheme == "https", !Self.isPlainHostName(host) { return nil }
        }
        let text = String(target.withoutFragment)
        return allowList.contains { $0.matches(text) } ? target : nil
    }

    /// Where a flow sends the browser: `redirectTo` when allowed, else the `Referer` when allowed,
    /// else the site URL (GoTrue replaces a refused `redirect_to` silently).
    public func target(redirectTo: String?, referer: String?) -> RedirectTarget {
        allowed(redirectTo) ?? allowed(referer) ?? siteURL
    }

    /// `[a-z0-9]([a-z0-9.-]*[a-z0-9])?`.
    static func isPlainHostName(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard let first = bytes.first, let last = bytes.last, isAlphanumeric(first), isAlphanumeric(last) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }
}
