/// An access token offered as a WebSocket subprotocol, for browsers: a page cannot set
/// `Authorization` on a WebSocket handshake, only the subprotocols it offers
/// (`new WebSocket(url, ["authgate", "authgate.bearer." + accessToken])`; a JWT is a valid
/// subprotocol token: base64url and dots). On a WebSocket handshake the gateway takes the token
/// from `authgate.bearer.<token>` as it would from `Authorization: Bearer <token>` (one credential
/// at most: with both, or two such elements, the handshake is refused), and never forwards either
/// element: the upstream gets the other subprotocols offered, and the caller's identity in the
/// identity headers. When the upstream chooses no subprotocol and the client offered `authgate`,
/// the `101` names `authgate`, since a browser that offered subprotocols fails a handshake whose
/// answer chooses none.
///
/// The elements are recognised without regard to ASCII case, so that no spelling of them reaches
/// an upstream; the token after the prefix is taken as it is.
enum WebSocketSubprotocolCredential {
    /// The subprotocol the gateway answers with when the upstream chose none.
    static let marker = "authgate"
    /// The prefix of an element that carries an access token.
    static let bearerPrefix = "authgate.bearer."

    /// What one `Sec-WebSocket-Protocol` element is to the gateway.
    enum Element: Equatable {
        /// Not the gateway's: forwarded.
        case other
        /// `authgate`.
        case marker
        /// `authgate.bearer.<token>` (the token empty when nothing follows the prefix).
        case bearer(String)
    }

    /// What `element` (already trimmed of spaces and tabs) is.
    static func classify(_ element: String) -> Element {
        let bytes = element.utf8
        if bytes.count == 8, element.equalsLowercaseASCII(marker) { return .marker }
        guard bytes.count >= 16, Substring(bytes.prefix(16)).equalsLowercaseASCII(bearerPrefix) else { return .other }
        return .bearer(String(element[bytes.index(bytes.startIndex, offsetBy: 16)...]))
    }

    /// The elements of a `Sec-WebSocket-Protocol` value (a comma-separated list), spaces and tabs
    /// around each trimmed, empty ones left out.
    static func elements(_ value: String) -> [String] {
        value.utf8.split(separator: UInt8(ascii: ",")).compactMap { element in
            let trimmed = Substring(element).trimmingOWS
            return trimmed.isEmpty ? nil : trimmed
        }
    }

    /// `value` without the gateway's elements, the others joined by `", "` (empty when none is
    /// left); nil when it holds none of them, so the field is forwarded untouched. Only WebSocket
    /// handshakes carry the field.
    static func withoutGatewayElements(_ value: String) -> String? {
        let elements = elements(value)
        let others = elements.filter { classify($0) == .other }
        return others.count == elements.count ? nil : others.joined(separator: ", ")
    }
}
