import AuthGateCore
import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reading GoTrue-style requests: JSON bodies up to 1 MiB (unknown fields and `null`s ignored),
/// bearer tokens, and JSON responses.
enum RequestSupport {
    static let maximumBodyBytes = 1 << 20
    /// The body cap of endpoints that take an ID token or a refresh token (a few KiB at most).
    static let tokenBodyBytes = 64 << 10

    /// Decodes the body; an empty body decodes as `{}`.
    /// - Parameter limit: the largest body the endpoint can need (each endpoint names its own;
    ///   1 MiB at most).
    /// - Throws: 400 `bad_json` for JSON that does not fit, 413 `request_entity_too_large` over `limit`.
    static func decode<Body: Decodable>(_ type: Body.Type, from request: Request, limit: Int = maximumBodyBytes) async throws -> Body {
        let bytes = try await bodyBytes(request, limit: limit)
        // The strict reader decides whether the body is JSON at all (duplicate names, control
        // characters, lone surrogates, numbers out of range are refused); Codable then only maps
        // a document that has one reading.
        _ = try parsed(bytes)
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw GoTrueError(.badRequest, code: "bad_json", message: "Could not parse request body as JSON: \(Self.describe(error))")
        }
    }

    /// The body as one JSON object, read by the strict reader alone (no Codable pass after it),
    /// for the hottest endpoints; an empty body is `{}`. Same limits and errors as
    /// ``decode(_:from:limit:)``.
    static func object(from request: Request, limit: Int = maximumBodyBytes) async throws -> JSONBody {
        guard let members = try parsed(try await bodyBytes(request, limit: limit)).objectValue else {
            throw GoTrueError(.badRequest, code: "bad_json", message: "Could not parse request body as JSON: the body is not a JSON object")
        }
        return JSONBody(members: members)
    }

    /// The body read by the strict JSON reader; 400 `bad_json` saying why it is not JSON.
    private static func parsed(_ bytes: [UInt8]) throws -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch let error as JSONValue.ParseError {
            throw GoTrueError(.badRequest, code: "bad_json", message: "Could not parse request body as JSON: \(error.reason)")
        } catch {
            throw GoTrueError(.badRequest, code: "bad_json", message: "Could not parse request body as JSON: \(Self.describe(error))")
        }
    }

    /// The body's bytes, `{}` when empty; 413 over `limit` (1 MiB at most), 400 when it cannot be
    /// read (its chunked framing broke).
    private static func bodyBytes(_ request: Request, limit: Int) async throws -> [UInt8] {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: min(limit, maximumBodyBytes))
        } catch is NIOTooManyBytesError {
            throw GoTrueError(.contentTooLarge, code: "request_entity_too_large", message: "Request body too large")
        } catch {
            throw unparsableBody
        }
        return buffer.readableBytes == 0 ? Array("{}".utf8) : Array(buffer.readableBytesView)
    }

    /// The bearer token of `Authorization: Bearer <token>` (scheme matched case-insensitively).
    static func bearerToken(_ request: Request, _ context: AuthGateRequestContext) -> String? {
        context.authorization(of: request).flatMap(bearerToken(authorization:))
    }

    /// The token of an `Authorization` value `Bearer <token>`, surrounding whitespace trimmed.
    static func bearerToken(authorization value: String) -> String? {
        guard let space = value.utf8.firstIndex(of: 0x20) else { return nil }
        guard value[..<space].equalsLowercaseASCII("bearer") else { return nil }
        let token = value[value.utf8.index(after: space)...].trimmingOWS
        return token.isEmpty ? nil : token
    }

    /// A body that cannot be read: its chunked framing broke (AuthGate's endpoints and proxied
    /// routes alike).
    static let unparsableBody = GoTrueError(.badRequest, code: "validation_failed", message: "The request body could not be parsed")

    static let missingBearer = GoTrueError(.unauthorized, code: "no_authorization", message: "This endpoint requires a valid Bearer token")

    /// The fields of a JSON answer that no cache may keep: built once (HTTPFields shares its
    /// storage), not from a dictionary literal for every answer.
    static let jsonNoStoreFields: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]

    /// A JSON response.
    static func json(_ object: [String: JSONValue], status: HTTPResponse.Status = .ok) throws -> Response {
        try json(value: .object(object), status: status)
    }

    /// A JSON response from JSON text already written (``GoTrueJSON/userText(_:identities:)``,
    /// ``GoTrueJSON/sessionText(_:)``).
    static func json(text: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: jsonNoStoreFields,
            body: .init(byteBuffer: ByteBuffer(bytes: text))
        )
    }

    /// A JSON response holding any value (GoTrue answers some lists as a bare array).
    static func json(value: JSONValue, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status,
            headers: jsonNoStoreFields,
            body: .init(byteBuffer: ByteBuffer(bytes: value.serialized()))
        )
    }

    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        case .none:
            return "invalid JSON"
        @unknown default:
            return "invalid JSON"
        }
    }

    /// The device a new session records: the request's `User-Agent` and client IP (through
    /// `trustedProxies`).
    static func device(_ request: Request, _ context: AuthGateRequestContext, trustedProxies: [IPNetwork]) -> SessionDevice {
        let address = ClientAddress.resolve(request.headers, peer: context.remoteAddress, trustedProxies: trustedProxies).address
        return SessionDevice(userAgent: request.headers[.userAgent], ip: address == "unknown" ? nil : address)
    }
}
