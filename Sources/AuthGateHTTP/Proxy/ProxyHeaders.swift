public import AuthGateCore
public import NIOHTTP1

/// Header hygiene between client and upstream.
///
/// Names are compared the way the servers behind the gateway may compare them: without regard to
/// case, and with `_` taken as `-` (CGI, WSGI and several frameworks fold `X_AuthGate_User_Id`
/// into `X-AuthGate-User-Id`). A client header that matches a name the gateway sets
/// (the identity prefix, `X-Forwarded-*`, `Forwarded`, `X-Real-IP`, `X-Request-Id`) in any such
/// spelling is dropped.
public enum ProxyHeaders {
    /// Hop-by-hop headers (RFC 9110 §7.6.1) plus the legacy `Proxy-*` family, in folded form.
    static let hopByHop: [[UInt8]] = [
        "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-connection", "proxy-authenticate",
        "proxy-authorization"
    ].map { Array($0.utf8) }

    /// A header name's byte in folded form: ASCII lower case, `_` as `-`.
    @inline(__always)
    static func fold(_ byte: UInt8) -> UInt8 {
        byte == UInt8(ascii: "_") ? UInt8(ascii: "-") : ASCIICase.lowered(byte)
    }

    /// `name` in folded form.
    static func folded(_ name: some StringProtocol) -> [UInt8] {
        name.utf8.map(fold)
    }

    /// `name`, folded, equals `folded` (no allocation).
    static func name(_ name: String, is folded: [UInt8]) -> Bool {
        name.utf8.count == folded.count && zip(name.utf8, folded).allSatisfy { fold($0) == $1 }
    }

    /// `name`, folded, starts with `folded`.
    static func name(_ name: String, hasPrefix folded: [UInt8]) -> Bool {
        name.utf8.count >= folded.count && zip(name.utf8, folded).allSatisfy { fold($0) == $1 }
    }

    /// Names a `Connection` header lists, folded: also hop-by-hop. Empty (and nothing allocated)
    /// without a `Connection` header.
    static func connectionListed(_ headers: HTTPHeaders) -> [[UInt8]] {
        var names: [[UInt8]] = []
        for (name, value) in headers where Self.name(name, is: connection) {
            for element in value.split(separator: ",") { names.append(folded(element.trimmingOWS)) }
        }
        return names
    }

    /// What hygiene does with a client header, by its folded name.
    private enum Rule {
        case drop, keep, authorization, forwardedFor, forwardedProto, forwardedHost, cookie, webSocketProtocol
    }

    private static func rule(for name: String, identityPrefix: [UInt8], listed: [[UInt8]]) -> Rule {
        if Self.name(name, hasPrefix: identityPrefix) { return .drop }
        for hop in hopByHop where Self.name(name, is: hop) { return .drop }
        for other in listed where Self.name(name, is: other) { return .drop }
        switch name.utf8.count {
        case 4 where Self.name(name, is: host): return .drop
        case 6 where Self.name(name, is: expect): return .drop
        case 6 where Self.name(name, is: cookie): return .cookie
        case 9 where Self.name(name, is: forwarded) || Self.name(name, is: realIP): return .drop
        case 12 where Self.name(name, is: requestIDName): return .drop
        case 13 where Self.name(name, is: authorizationName): return .authorization
        case 15 where Self.name(name, is: forwardedFor): return .forwardedFor
        case 16 where Self.name(name, is: forwardedHost): return .forwardedHost
        case 17 where Self.name(name, is: forwardedProto): return .forwardedProto
        case 22 where Self.name(name, is: webSocketProtocol): return .webSocketProtocol
        default: return Self.name(name, hasPrefix: forwardedPrefix) ? .drop : .keep
        }
    }

    private static let connection = Array("connection".utf8)
    private static let host = Array("host".utf8)
    private static let expect = Array("expect".utf8)
    private static let cookie = Array("cookie".utf8)
    private static let webSocketProtocol = Array("sec-websocket-protocol".utf8)
    private static let forwarded = Array("forwarded".utf8)
    private static let realIP = Array("x-real-ip".utf8)
    private static let requestIDName = Array("x-request-id".utf8)
    private static let authorizationName = Array("authorization".utf8)
    private static let forwardedFor = Array("x-forwarded-for".utf8)
    private static let forwardedHost = Array("x-forwarded-host".utf8)
    private static let forwardedProto = Array("x-forwarded-proto".utf8)
    private static let forwardedPrefix = Array("x-forwarded-".utf8)
    private static let upgrade = Array("upgrade".utf8)

    /// The identity headers' names for a prefix, made once (not per request).
    public struct IdentityNames: Sendable {
        let foldedPrefix: [UInt8]
        let userID: String
        let sessionID: String
        let role: String
        let provider: String
        let anonymous: String
        let aal: String

        public init(prefix: String) {
            foldedPrefix = ProxyHeaders.folded(prefix)
            userID = prefix + "User-Id"
            sessionID = prefix + "Session-Id"
            role = prefix + "Role"
            provider = prefix + "Provider"
            anonymous = prefix + "Anonymous"
            aal = prefix + "AAL"
        }
    }

    /// What the upstream receives: the client's headers without hop-by-hop ones, without any
    /// header spelling a name the gateway sets, without `Authorization` (unless the route forwards
    /// it), `Host` and `Expect`, with its `Cookie` fields (without the browser flow's cookies) in
    /// one; then AuthGate's identity headers, `X-Forwarded-*`, `Forwarded` and `X-Request-Id`.
    public static func upstreamHeaders(
        from fields: HTTPHeaders,
        claims: AccessTokenClaims?,
        route: RouteConfiguration,
        identityPrefix: String,
        clientAddress: String,
        peerIsTrusted: Bool,
        scheme: String,
        authority: String?,
        requestID: String
    ) -> HTTPHeaders {
        upstreamHeaders(
            from: fields, claims: claims, route: route, identity: IdentityNames(prefix: identityPrefix), clientAddress: clientAddress,
            peerIsTrusted: peerIsTrusted, scheme: scheme, authority: authority, requestID: requestID
        )
    }

    /// ``upstreamHeaders(from:claims:route:identityPrefix:clientAddress:peerIsTrusted:scheme:authority:requestID:)``
    /// with the identity headers' names made beforehand.
    static func upstreamHeaders(
        from fields: HTTPHeaders,
        claims: AccessTokenClaims?,
        route: RouteConfiguration,
        identity: IdentityNames,
        clientAddress: String,
        peerIsTrusted: Bool,
        scheme: String,
        authority: String?,
        requestID: String
    ) -> HTTPHeaders {
        let listed = connectionListed(fields)
        let prefix = identity.foldedPrefix
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count + 10)
        var forwardedFor: [String] = []
        var forwardedProto: String?
        var forwardedHost: String?
        var cookies: (name: String, values: [String])?
        for (name, value) in fields {
            // A name spelled with `_` is the real name only to servers that fold it: it is never
            // one of ours to keep.
            let exact = !name.utf8.contains(UInt8(ascii: "_"))
            switch rule(for: name, identityPrefix: prefix, listed: listed) {
            case .drop:
                continue
            case .keep:
                headers.add(name: name, value: value)
            case .cookie:
                // The browser flow's cookies are the gateway's; the upstream gets the others, in
                // one field (below).
                let kept = withoutFlowCookies(value) ?? value
                if !kept.isEmpty { cookies = (cookies?.name ?? name, (cookies?.values ?? []) + [kept]) }
            case .webSocketProtocol:
                // A credential offered as a subprotocol, and the gateway's marker, stay here.
                add(name, value, filtered: WebSocketSubprotocolCredential.withoutGatewayElements(value), to: &headers)
            case .authorization:
                if route.forwardAuthorization, exact { headers.add(name: name, value: value) }
            case .forwardedFor:
                // A chain is kept only when it comes from a trusted proxy; otherwise it is a spoof.
                if peerIsTrusted, exact { forwardedFor.append(value) }
            case .forwardedProto:
                // Even a trusted proxy may pass a client's value on unchecked; only a scheme is
                // believed, since it is written into `Forwarded`, where `https;for=…` would add a
                // parameter.
                if peerIsTrusted, exact { forwardedProto = Self.scheme(value) }
            case .forwardedHost:
                if peerIsTrusted, exact { forwardedHost = HostName.isValidAuthority(value.utf8) ? value : nil }
            }
        }
        if let cookies {
            // One field, as RFC 9113 §8.2.3 requires of an HTTP/2 request's `cookie` fields (a client
            // may send each pair in a field of its own) before they go out over HTTP/1.1, where
            // RFC 6265 allows one `Cookie` field and servers that join repeated fields with `,`
            // would read `a=1, b=2` as one cookie. One field goes on as it came, byte for byte.
            headers.add(name: cookies.name, value: cookies.values.count == 1 ? cookies.values[0] : cookies.values.joined(separator: "; "))
        }
        forwardedFor.append(clientAddress)
        let proto = forwardedProto ?? scheme
        let host = forwardedHost ?? authority
        headers.add(name: "X-Forwarded-For", value: forwardedFor.joined(separator: ", "))
        headers.add(name: "X-Forwarded-Proto", value: proto)
        if let host {
            headers.add(name: "X-Forwarded-Host", value: host)
            headers.add(name: "Forwarded", value: "for=\(forwardedNode(clientAddress));proto=\(proto);host=\"\(host.replacingQuotes)\"")
        } else {
            headers.add(name: "Forwarded", value: "for=\(forwardedNode(clientAddress));proto=\(proto)")
        }
        headers.add(name: "X-Request-Id", value: requestID)
        if let claims {
            headers.add(name: identity.userID, value: claims.sub)
            if let sessionID = claims.sessionID { headers.add(name: identity.sessionID, value: sessionID) }
            headers.add(name: identity.role, value: claims.role)
            if case .string(let provider) = claims.appMetadata["provider"] {
                headers.add(name: identity.provider, value: provider)
            } else if claims.isAnonymous {
                headers.add(name: identity.provider, value: "anonymous")
            }
            headers.add(name: identity.anonymous, value: claims.isAnonymous ? "true" : "false")
            headers.add(name: identity.aal, value: claims.aal)
        }
        return headers
    }

    /// Adds the field `name`: `value` as it came when the filter took nothing from it (`filtered`
    /// nil), else what the filter left, or nothing when it left nothing.
    private static func add(_ name: String, _ value: String, filtered: String?, to headers: inout HTTPHeaders) {
        guard let filtered else { return headers.add(name: name, value: value) }
        if !filtered.isEmpty { headers.add(name: name, value: filtered) }
    }

    /// A `Cookie` field's value without the browser flow's cookies (``FlowCookie/isFlowCookie(_:)``),
    /// its other pairs as they came, joined by `"; "`; nil (and nothing allocated) when it has none.
    static func withoutFlowCookies(_ value: String) -> String? {
        let bytes = value.utf8
        var pairStart = bytes.startIndex
        var found = false
        while true {
            if FlowCookie.isFlowCookie(bytes[pairStart...]) {
                found = true
                break
            }
            guard let semicolon = bytes[pairStart...].firstIndex(of: UInt8(ascii: ";")) else { break }
            pairStart = bytes.index(after: semicolon)
        }
        guard found else { return nil }
        return FlowCookie.pairs(in: value).filter { !$0.isEmpty && !FlowCookie.isFlowCookie($0) }.map { String(decoding: $0, as: UTF8.self) }
            .joined(separator: "; ")
    }

    /// What the client receives from the upstream: without hop-by-hop headers, with the request id.
    /// `keepsUpgrade` keeps `Upgrade` and `Connection: Upgrade` (a WebSocket handshake's 101).
    public static func clientHeaders(from headers: HTTPHeaders, requestID: String, keepsUpgrade: Bool = false) -> HTTPHeaders {
        let listed = connectionListed(headers)
        var fields = HTTPHeaders()
        fields.reserveCapacity(headers.count + 1)
        for (name, value) in headers {
            if keepsUpgrade, Self.name(name, is: upgrade) || Self.name(name, is: connection) {
                fields.add(name: name, value: value)
                continue
            }
            if hopByHop.contains(where: { Self.name(name, is: $0) }) || listed.contains(where: { Self.name(name, is: $0) })
                || Self.name(name, is: requestIDName)
            {
                continue
            }
            fields.add(name: name, value: value)
        }
        fields.add(name: "X-Request-Id", value: requestID)
        return fields
    }

    /// Removes every `Access-Control-*` header (and `Vary: Origin` is re-added by the route's CORS).
    static func removeCORSHeaders(_ headers: inout HTTPHeaders) {
        let names = Set(headers.map { $0.name.lowercased() }.filter { $0.hasPrefix("access-control-") })
        for name in names { headers.remove(name: name) }
    }

    /// `http` or `https` (any case) in lower case; nil for anything else.
    static func scheme(_ value: String) -> String? {
        if value.equalsLowercaseASCII("http") { return "http" }
        if value.equalsLowercaseASCII("https") { return "https" }
        return nil
    }

    /// RFC 7239 node: IPv6 addresses are quoted and bracketed.
    static func forwardedNode(_ address: String) -> String {
        address.contains(":") ? "\"[\(address)]\"" : address
    }
}

extension StringProtocol {
    fileprivate var replacingQuotes: String { String(self.filter { $0 != "\"" && $0 != "\\" }) }
}
