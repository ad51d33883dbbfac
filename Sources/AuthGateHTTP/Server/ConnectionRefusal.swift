/// How a connection refused for `server.max_connections` is answered, decided from the first
/// bytes the client sends (after TLS, when the listener has it): HTTP/2's client connection
/// preface, whether sent with prior knowledge or after ALPN chose `h2`, gets HTTP/2's refusal;
/// anything else gets HTTP/1.1's `503`. An HTTP/2 client reading an HTTP/1.1 answer sees a
/// protocol error, not "try again".
///
/// The HTTP/2 refusal is the server's connection preface (an empty SETTINGS frame) and a GOAWAY
/// with last stream 0 and REFUSED_STREAM: no stream was processed, so the client may retry its
/// requests on another connection (RFC 9113, 6.8 and 8.7). Bytes may arrive one at a time; the
/// answer is given once.
struct ConnectionRefusal {
    /// The answer to write before closing.
    enum Answer: Equatable {
        case http1
        case http2

        /// The bytes on the wire.
        var bytes: [UInt8] {
            switch self {
            case .http1: ConnectionRefusal.http1Refusal
            case .http2: ConnectionRefusal.http2Refusal
            }
        }
    }

    /// Whether the listener serves HTTP/2 at all (`server.http2.enabled`).
    private let http2: Bool
    /// How many bytes of the client preface have matched so far.
    private var matched = 0
    /// Set once the answer is known (and returned once).
    private(set) var answer: Answer?

    init(http2: Bool) {
        self.http2 = http2
    }

    /// The answer when it is known before any byte arrives: a listener without HTTP/2 answers
    /// every refused connection in HTTP/1.1. Nil: wait for ``received(_:)``.
    mutating func opened() -> Answer? {
        guard !http2, answer == nil else { return nil }
        answer = .http1
        return .http1
    }

    /// Feeds bytes the client sent; returns the answer the first time it is known.
    mutating func received(_ bytes: some Sequence<UInt8>) -> Answer? {
        guard answer == nil else { return nil }
        for byte in bytes {
            guard byte == Self.clientPreface[matched] else {
                answer = .http1
                return .http1
            }
            matched += 1
            if matched == Self.clientPreface.count {
                answer = .http2
                return .http2
            }
        }
        return nil
    }

    /// HTTP/2's client connection preface (RFC 9113, 3.4).
    static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// GoTrue's error shape in an HTTP/1.1 `503`, then the connection closes.
    static let http1Refusal: [UInt8] = {
        let body = #"{"code":503,"error_code":"too_many_connections","msg":"The gateway has too many connections; try again"}"#
        let head =
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nx-sb-error-code: too_many_connections\r\n"
            + "retry-after: 1\r\ncontent-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }()

    /// An empty SETTINGS frame, then GOAWAY (last stream 0, REFUSED_STREAM = 0x7) whose debug
    /// data is the stable error code.
    static let http2Refusal: [UInt8] = {
        let settings: [UInt8] = [0, 0, 0, 0x4, 0, 0, 0, 0, 0]
        let debugData = Array("too_many_connections".utf8)
        let payload: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0x7] + debugData
        let goAway: [UInt8] = [0, 0, UInt8(payload.count), 0x7, 0, 0, 0, 0, 0] + payload
        return settings + goAway
    }()
}
