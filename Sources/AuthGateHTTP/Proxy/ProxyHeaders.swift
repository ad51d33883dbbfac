public import AuthGateCore
public import HTTPTypes
public import NIOHTTP1

/// Header hygiene between client and upstream.
public enum ProxyHeaders {
    /// Hop-by-hop headers (RFC 9110 §7.6.1) plus the legacy `Proxy-*` family.
    static let hopByHop: Set<String> = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-connection", "proxy-authenticate", "proxy-authorization"]

    /// Names a `Connection` header lists: also hop-by-hop.
    static func connectionListed(_ fields: HTTPFields) -> Set<String> {
        Set(fields[values: .connection].flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS.lowercased() })
    }

    /// What the upstream receives: the client's headers without hop-by-hop ones, without any
    /// identity header the client sent, without `Authorization` (unless the route forwards it) and
    /// `Host`; then AuthGate's identity headers, `X-Forwarded-*`, `Forwarded` and `X-Request-Id`.
    public static func upstreamHeaders(
        from fields: HTTPFields,
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
        let prefix = identityPrefix.lowercased()
        var headers = HTTPHeaders()
        var forwardedFor: [String] = []
        var forwardedProto: String?
        var forwardedHost: String?
        for field in fields {
            let name = field.name.canonicalName
            if hopByHop.contains(name) || listed.contains(name) || name.hasPrefix(prefix) || name == "host" || name == "x-request-id" { continue }
            if name == "authorization", !route.forwardAuthorization { continue }
            switch name {
            case "x-forwarded-for":
                // A chain is kept only when it comes from a trusted proxy; otherwise it is a spoof.
                if peerIsTrusted { forwardedFor.append(field.value) }
            case "x-forwarded-proto":
                if peerIsTrusted { forwardedProto = field.value }
            case "x-forwarded-host":
                if peerIsTrusted { forwardedHost = field.value }
            case "forwarded", "x-real-ip":
                continue
            default:
                headers.add(name: field.name.rawName, value: field.value)
            }
        }
        forwardedFor.append(clientAddress)
        let proto = forwardedProto ?? scheme
        let host = forwardedHost ?? authority
        headers.replaceOrAdd(name: "X-Forwarded-For", value: forwardedFor.joined(separator: ", "))
        headers.replaceOrAdd(name: "X-Forwarded-Proto", value: proto)
        if let host {
            headers.replaceOrAdd(name: "X-Forwarded-Host", value: host)
            headers.replaceOrAdd(name: "Forwarded", value: "for=\(forwardedNode(clientAddress));proto=\(proto);host=\"\(host.replacingQuotes)\"")
        } else {
            headers.replaceOrAdd(name: "Forwarded", value: "for=\(forwardedNode(clientAddress));proto=\(proto)")
        }
        headers.replaceOrAdd(name: "X-Request-Id", value: requestID)
        if let claims {
            headers.replaceOrAdd(name: identityPrefix + "User-Id", value: claims.sub)
            if let sessionID = claims.sessionID { headers.replaceOrAdd(name: identityPrefix + "Session-Id", value: sessionID) }
            headers.replaceOrAdd(name: identityPrefix + "Role", value: claims.role)
            if case .string(let provider) = claims.appMetadata["provider"] {
                headers.replaceOrAdd(name: identityPrefix + "Provider", value: provider)
            } else if claims.isAnonymous {
                headers.replaceOrAdd(name: identityPrefix + "Provider", value: "anonymous")
            }
            headers.replaceOrAdd(name: identityPrefix + "Anonymous", value: String(claims.isAnonymous))
            headers.replaceOrAdd(name: identityPrefix + "AAL", value: claims.aal)
        }
        return headers
    }

    /// What the client receives from the upstream: without hop-by-hop headers.
    public static func clientHeaders(from headers: HTTPHeaders, requestID: String) -> HTTPFields {
        let listed = Set(headers["connection"].flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS.lowercased() })
        var fields = HTTPFields()
        for (name, value) in headers {
            let lower = name.lowercased()
            if hopByHop.contains(lower) || listed.contains(lower) { continue }
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        fields[HTTPField.Name("X-Request-Id")!] = requestID
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
