import AuthGateCore
import Crypto
import NIOHPACK

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// RFC 8441's WebSocket handshake on an HTTP/2 stream (an extended CONNECT with
/// `:protocol websocket`, answered `200`), translated to and from RFC 6455's HTTP/1.1 handshake
/// (`GET` with `Upgrade: websocket`, answered `101`), which the rest of the gateway decides on and
/// the upstream speaks. Pure functions of header blocks, tested without a connection.
///
/// On HTTP/1.1 the client makes the handshake's key and checks the upstream's
/// `Sec-WebSocket-Accept`; an HTTP/2 client sends no key (RFC 8441 §5), so the gateway makes one
/// per stream and checks the accept value itself before any frame is relayed.
enum HTTP2WebSocketHandshake {
    /// The one `:protocol` value the gateway tunnels (RFC 8441 §4, the IANA registry's token).
    static let webSocket = "websocket"

    /// The header block of an extended CONNECT as the HTTP/1.1 handshake the gateway decides on:
    /// `:method GET`, `:protocol` gone and named instead by `upgrade` (with `connection:
    /// upgrade`), and `sec-websocket-key: key` in place of any the client sent. Nil when the block
    /// is not an extended CONNECT (no `:protocol`): it passes as it is.
    ///
    /// Another `:protocol` than `websocket` is carried to `upgrade` as it is, so that the
    /// gateway's one rule on upgrades (only a WebSocket, only on a proxy route) refuses it.
    /// NIO has already checked the block (one `:protocol`, only with `CONNECT`, with `:scheme`
    /// and `:path`, no connection-specific field, values without controls or spaces).
    static func upgradeRequest(_ headers: HPACKHeaders, key: String) -> HPACKHeaders? {
        guard let upgrade = headers.first(name: ":protocol") else { return nil }
        var translated = HPACKHeaders()
        translated.reserveCapacity(headers.count + 3)
        for (name, value, indexing) in headers {
            switch name {
            case ":protocol", "sec-websocket-key": continue
            case ":method": translated.add(name: name, value: "GET", indexing: indexing)
            default: translated.add(name: name, value: value, indexing: indexing)
            }
        }
        translated.add(name: "upgrade", value: upgrade.equalsLowercaseASCII(webSocket) ? webSocket : upgrade)
        translated.add(name: "connection", value: "upgrade")
        translated.add(name: "sec-websocket-key", value: key)
        return translated
    }

    /// The answer to an extended CONNECT for the upstream's answer `headers` to the handshake: a
    /// `101` becomes `200` without the HTTP/1.1 handshake's own fields (`upgrade`, `connection`,
    /// `sec-websocket-accept`: HTTP/2 forbids the first two, and any answer loses them); the
    /// negotiated subprotocol and extensions stay. Any other 2xx, which on HTTP/2 would tell the
    /// client that a tunnel is open, becomes `502`: the upstream did not switch. Other statuses
    /// pass as they are.
    static func connectAnswer(_ headers: HPACKHeaders) -> (headers: HPACKHeaders, opensTunnel: Bool) {
        guard let status = headers.first(name: ":status") else { return (headers, false) }
        let opensTunnel = status == "101"
        let answered: String
        if opensTunnel {
            answered = "200"
        } else if status.utf8.count == 3, status.utf8.first == UInt8(ascii: "2") {
            answered = "502"
        } else {
            answered = status
        }
        var translated = HPACKHeaders()
        translated.reserveCapacity(headers.count)
        for (name, value, indexing) in headers {
            switch name {
            case ":status": translated.add(name: name, value: answered, indexing: indexing)
            case "upgrade", "connection", "sec-websocket-accept": continue
            default: translated.add(name: name, value: value, indexing: indexing)
            }
        }
        return (translated, opensTunnel)
    }

    /// A new handshake key: 16 random bytes in base64 (RFC 6455 §4.1).
    static func newKey() -> String {
        Data(Base64URL.randomBytes(16)).base64EncodedString()
    }

    /// The `Sec-WebSocket-Accept` value an upstream must answer `key` with (RFC 6455 §4.2.2):
    /// base64 of the SHA-1 of the key and the protocol's GUID.
    static func acceptValue(for key: String) -> String {
        Data(Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    /// Whether the upstream's `Sec-WebSocket-Accept` fields (`values`) are exactly one, the one
    /// `key` asks for.
    static func accepts(_ values: [String], key: String) -> Bool {
        guard values.count == 1, let value = values.first else { return false }
        return value.utf8.elementsEqual(acceptValue(for: key).utf8)
    }
}
