public import HTTPTypes
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An error a client sees, in GoTrue's shapes: the legacy body
/// `{"code":<status>,"error_code":"…","msg":"…"}` or, when the request carries
/// `X-Supabase-Api-Version: 2024-01-01` or later, `{"code":"…","message":"…"}` with the version
/// header echoed. Both carry `x-sb-error-code`.
///
/// The message is written for clients; internal causes go to logs, never here.
public struct GoTrueError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    /// GoTrue's stable error code (`not_found`, `validation_failed`, …).
    public let code: String
    public let message: String
    /// Extra response headers (`WWW-Authenticate`, `Retry-After`).
    public let headers: HTTPFields

    public init(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The first API version that uses the new error body.
    static let newErrorShapeVersion = "2024-01-01"
    static let apiVersionHeader = HTTPField.Name.constant("X-Supabase-Api-Version")
    static let errorCodeHeader = HTTPField.Name.constant("x-sb-error-code")

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let (headers, body) = try encoded(requestHeaders: request.headers, requestID: (context as? AuthGateRequestContext)?.requestID)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The response headers and body for a request with `requestHeaders`; `requestID` goes into
    /// legacy 5xx bodies as `error_id`.
    func encoded(requestHeaders: HTTPFields, requestID: String?) throws -> (HTTPFields, ByteBuffer) {
        var headers = self.headers
        let (extra, body) = try encoded(apiVersion: requestHeaders[Self.apiVersionHeader], requestID: requestID)
        for (name, value) in extra {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        return (headers, ByteBuffer(bytes: body))
    }

    /// The body for a client that sent `apiVersion` (`X-Supabase-Api-Version`), and the headers it
    /// needs: content type, `x-sb-error-code`, and the version echoed for the new shape. This is the
    /// one place GoTrue error bodies are written, for the API and the proxy alike.
    func encoded(apiVersion: String?, requestID: String?) throws -> (headers: [(String, String)], body: Data) {
        var headers = [("Content-Type", "application/json"), ("x-sb-error-code", code)]
        let body: Data
        if let version = apiVersion, Self.isDate(version), version >= Self.newErrorShapeVersion {
            headers.append(("X-Supabase-Api-Version", version))
            body = try JSONEncoder().encode(NewShape(code: code, message: message))
        } else {
            var errorID: String?
            if status.code >= 500, let requestID, !requestID.isEmpty { errorID = requestID }
            body = try JSONEncoder().encode(LegacyShape(code: Int(status.code), errorCode: code, msg: message, errorID: errorID))
        }
        return (headers, body)
    }

    private struct NewShape: Encodable {
        let code: String
        let message: String
    }

    private struct LegacyShape: Encodable {
        let code: Int
        let errorCode: String
        let msg: String
        let errorID: String?

        enum CodingKeys: String, CodingKey {
            case code
            case errorCode = "error_code"
            case msg
            case errorID = "error_id"
        }
    }

    /// True for `YYYY-MM-DD`.
    private static func isDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return false }
        return bytes.enumerated().allSatisfy { index, byte in index == 4 || index == 7 || (byte >= 48 && byte <= 57) }
    }
}

extension GoTrueError {
    /// The GoTrue code for a bare HTTP status (used when the router or Hummingbird raised it).
    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: return "validation_failed"
        case 401: return "no_authorization"
        case 403: return "not_admin"
        case 404: return "not_found"
        case 405: return "method_not_allowed"
        case 413: return "request_entity_too_large"
        case 429: return "over_request_rate_limit"
        case 503: return "service_unavailable"
        case 504: return "request_timeout"
        default: return status.code >= 500 ? "unexpected_failure" : "unknown"
        }
    }
}
