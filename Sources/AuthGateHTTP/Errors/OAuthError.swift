public import HTTPTypes
public import Hummingbird

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// GoTrue's OAuth-style error, used for id_token validation failures: always 400,
/// `{"error":"invalid request","error_description":"Bad ID token"}` (note the space in the
/// error), with the API version header echoed.
public struct OAuthError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status = .badRequest
    public let error: String
    public let description: String

    public init(error: String, description: String) {
        self.error = error
        self.description = description
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let version = request.headers[GoTrueError.apiVersionHeader] { headers[GoTrueError.apiVersionHeader] = version }
        let body = try JSONEncoder().encode(["error": error, "error_description": description])
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
