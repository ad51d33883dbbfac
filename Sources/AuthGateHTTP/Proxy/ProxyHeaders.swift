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
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-connection", "proxy-authenticate",
        "proxy-authorization",
    ]

    /// `name` in folded form: ASCII lower case, `_` as `-`.
    static func folded(_ name: some StringProtocol) -> String {
        String(decoding: name.utf8.map { byte in byte == UInt8(ascii: "_") ? UInt8(ascii: "-") : (byte >= 65 && byte <= 90 ? byte | 0x20 : byte) }, as: UTF8.self)
    }

    /// Names a `Connection` header lists, folded: also hop-by-hop.
    static func connectionListed(_ headers: HTTPHeaders) -> Set<String> {
        var names = Set<String>()
        for value in headers["connection"] {
            for element in value.split(separator: ",") { names.insert(folded(element.trimmingOWS)) }
        }
        return names
    }

    /// What the upstream receives: the client's headers without hop-by-hop ones, without any
    /// header spelling a name the gateway sets, without `Authorization` (unless the route forwards
    /// it), `Host` and `Expect`; then AuthGate's identity headers, `X-Forwarded-*`, `Forwarded`
    /// and `X-Request-Id`.
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
        let listed = connectionListed(fields)
        let prefix = folded(identityPrefix)
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count + 10)
        var forwardedFor: [String] = []
        var forwardedProto: String?
        var forwardedHost: String?
        for (name, value) in fields {
            let folded = folded(name)
            if hopByHop.contains(folded) || listed.contains(folded) || folded.hasPrefix(prefix) { continue }
            let exact = !name.utf8.contains(UInt8(ascii: "_"))
            switch folded {
            case "host", "x-request-id", "forwarded", "x-real-ip", "expect":
                continue
            case "authorization":
                if route.forwardAuthorization, exact { headers.add(name: name, value: value) }
            case "x-forwarded-for":
                // A chain is kept only when it comes from a trusted proxy; otherwise it is a spoof.
                if peerIsTrusted, exact { forwardedFor.append(value) }
            case "x-forwarded-proto":
                if peerIsTrusted, exact { forwardedProto = value }
            case "x-forwarded-host":
                if peerIsTrusted, exact { forwardedHost = value }
            default:
                if folded.hasPrefix("x-forwarded-") { continue }
                headers.add(name: name, value: value)
            }
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
            headers.add(name: identityPrefix + "User-Id", value: claims.sub)
            if let sessionID = claims.sessionID { headers.add(name: identityPrefix + "Session-Id", value: sessionID) }
            headers.add(name: identityPrefix + "Role", value: claims.role)
            if case .string(let provider) = claims.appMetadata["provider"] {
                headers.add(name: identityPrefix + "Provider", value: provider)
            } else if claims.isAnonymous {
                headers.add(name: identityPrefix + "Provider", value: "anonymous")
            }
            headers.add(name: identityPrefix + "Anonymous", value: String(claims.isAnonymous))
            headers.add(name: identityPrefix + "AAL", value: claims.aal)
        }
        return headers
    }

    /// What the client receives from the upstream: without hop-by-hop headers, with the request id.
    /// `keepsUpgrade` keeps `Upgrade` and `Connection: Upgrade` (a WebSocket handshake's 101).
    public static func clientHeaders(from headers: HTTPHeaders, requestID: String, keepsUpgrade: Bool = false) -> HTTPHeaders {
        let listed = connectionListed(headers)
        var fields = HTTPHeaders()
        fields.reserveCapacity(headers.count + 1)
        for (name, value) in headers {
            let folded = folded(name)
            if keepsUpgrade, folded == "upgrade" || folded == "connection" {
                fields.add(name: name, value: value)
                continue
            }
            if hopByHop.contains(folded) || listed.contains(folded) || folded == "x-request-id" { continue }
            fields.add(name: name, value: value)
        }
        fields.add(name: "X-Request-Id", value: requestID)
        return fields
    }

    /// RFC 7239 node: IPv6 addresses are quoted and bracketed.
    static func forwardedNode(_ address: String) -> String {
        address.contains(":") ? "\"[\(address)]\"" : address
    }
}

extension StringProtocol {
    fileprivate var replacingQuotes: String { String(self.filter { $0 != "\"" && $0 != "\\" }) }
}
