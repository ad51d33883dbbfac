import AuthGateCore
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// AuthGate's own endpoints answered from the connection's pipeline: for a request whose body is
/// small and of known length, ``GatewayConnectionHandler`` gathers the whole request and calls
/// the router here, in one task, and writes the answer in one flush. The router, its middleware
/// and its handlers are the ones Hummingbird runs, so the answer is the same; what is skipped is
/// Hummingbird's per-connection async channel (a task hop for every request part and for the
/// answer), which cost more than a `GET /user` itself.
///
/// Other requests (a chunked or larger body, `Expect: 100-continue`, `HEAD`, an upgrade) go to
/// Hummingbird's channel as before.
struct ApplicationPipeline: Sendable {
    /// The router, as Hummingbird's application runs it.
    let responder: any HTTPResponder<AuthGateRequestContext>
    /// The listener speaks TLS (the request's scheme).
    let secure: Bool
    let logger: Logger

    /// The largest request body gathered here; every endpoint's own limit is smaller (the metadata
    /// of `PUT /user` is capped well below it by default), and a larger body streams through
    /// Hummingbird, which applies the same limits.
    static let maxBody = 64 << 10

    /// The largest answer gathered: AuthGate's answers are small JSON documents (and `/metrics`).
    static let maxAnswer = 16 << 20

    /// The request to serve here, in Hummingbird's types, or nil when Hummingbird's channel should
    /// take it. `head` is the decided (normalized) head.
    func request(for head: HTTPRequestHead, facts: RequestHeadFacts) -> ApplicationRequest? {
        // The decision refused two `Authorization` lines already; with one it travels beside the head.
        guard head.method != .HEAD, !facts.hasUpgrade, !facts.expectsContinue, !facts.hasTransferEncoding, facts.authorizationCount <= 1 else {
            return nil
        }
        // The decision already refused a length that is not a plain number of at most 18 digits.
        if facts.contentLengthCount > 0 {
            guard let length = facts.contentLength, length <= Self.maxBody else { return nil }
        }
        return Self.convert(head, secure: secure, takingAuthorization: true)
    }

    /// `head` in HTTPTypes' form: what `HTTPRequest(head, secure:splitCookie: false)` makes of it
    /// (the first `Host` line as the authority and not a field, fields with invalid names
    /// dropped), without the parts that cost the most for nothing here. An origin-form target
    /// (`/…`, every target the decision hands over but `*`) is the path as it is, where the
    /// library parses every target with `URLComponents` to find a scheme that such a target
    /// cannot have; and the `Host` line is found by its bytes, not by lower-casing every name.
    ///
    /// With `takingAuthorization`, an origin-form request's `Authorization` line (the caller
    /// allows one at most) goes beside the head instead of into its fields
    /// (``ApplicationRequest/authorization``).
    static func convert(_ head: HTTPRequestHead, secure: Bool, takingAuthorization: Bool = false) -> ApplicationRequest? {
        guard head.uri.utf8.first == UInt8(ascii: "/") else {
            return (try? HTTPRequest(head, secure: secure, splitCookie: false)).map { ApplicationRequest(head: $0, authorization: nil) }
        }
        guard let method = try? HTTPRequest.Method(head.method) else { return nil }
        var fields = HTTPFields()
        fields.reserveCapacity(head.headers.count)
        var authority: String?
        var authorization: String?
        var hostSeen = false
        for (name, value) in head.headers {
            if !hostSeen, name.utf8.count == 4, name.equalsLowercaseASCII("host") {
                hostSeen = true
                authority = value
                continue
            }
            if takingAuthorization, name.utf8.count == 13, name.equalsLowercaseASCII("authorization") {
                if authorization == nil { authorization = value }
                continue
            }
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        let request = HTTPRequest(method: method, scheme: secure ? "https" : "http", authority: authority, path: head.uri, headerFields: fields)
        return ApplicationRequest(head: request, authorization: authorization)
    }

    /// The router's answer to `request`: a head for the client's HTTP version and the whole body.
    /// Never throws: what the router throws past its own error handling is a 500, as Hummingbird
    /// answers it.
    func respond(to request: ApplicationRequest, body: ByteBuffer, channel: any Channel) async -> (HTTPResponse, ByteBuffer) {
        var context = AuthGateRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        context.authorizationBesideFields = request.authorization
        var response: Response
        do {
            response = try await responder.respond(to: Request(head: request.head, body: RequestBody(buffer: body)), context: context)
        } catch {
            logger.debug("unrecognised error", metadata: ["gw.error_type": "\(type(of: error))"])
            response = Response(status: .internalServerError, body: ResponseBody())
        }
        let collector = AnswerCollector()
        do {
            try await response.body.write(collector)
        } catch {
            logger.error("answer too large to gather", metadata: ["gw.path": "\(request.head.path ?? "")"])
            return (HTTPResponse(status: .internalServerError, headerFields: [.contentLength: "0"]), ByteBuffer())
        }
        // The framing headers are the router's, as Hummingbird would send them (NIO's encoder
        // chunks a body of unknown length).
        return (response.head, collector.buffer)
    }
}

/// A request the router answers from the connection (``ApplicationPipeline``).
struct ApplicationRequest {
    /// The head in HTTPTypes' form, without its `Authorization` line when ``authorization`` holds it.
    let head: HTTPRequest
    /// The `Authorization` line's value, kept beside the fields rather than in them: HTTPTypes checks
    /// every byte of a field's value again, a kilobyte for an access token (the costliest step of a
    /// `GET /user`), where NIO's parser has already refused any byte a field value may not hold. The
    /// handlers read it through ``AuthGateRequestContext/authorization(of:)``, as they read the
    /// field of a request that came through Hummingbird's channel.
    let authorization: String?
}

/// Gathers an answer's body (every AuthGate answer is one buffer; a streamed one is gathered up to
/// ``ApplicationPipeline/maxAnswer``).
private final class AnswerCollector: ResponseBodyWriter {
    var buffer = ByteBuffer()

    struct TooLarge: Error {}

    func write(_ part: ByteBuffer) async throws {
        guard part.readableBytes <= ApplicationPipeline.maxAnswer - buffer.readableBytes else { throw TooLarge() }
        if buffer.readableBytes == 0 {
            buffer = part
        } else {
            var part = part
            buffer.writeBuffer(&part)
        }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
