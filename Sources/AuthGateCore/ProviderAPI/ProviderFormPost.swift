import AsyncHTTPClient
import NIOCore
import NIOHTTP1

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One form-encoded POST to a provider's REST API (Apple's `/auth/token` and `/auth/revoke`,
/// Google's revoke endpoint) and its answer, read with a size cap; the error classes every such
/// call shares: unreachable, 5xx, 429 or a redirect (never followed) is
/// ``AuthGateError/Code/providerUnavailable`` (retry),
/// `invalid_client` or `unauthorized_client` is ``AuthGateError/Code/providerCredentialsRejected``,
/// any other 4xx is ``AuthGateError/Code/providerRejected``. No field value (a code, a token, the
/// client secret) is ever put in an error message.
struct ProviderFormPost: Sendable {
    /// The provider's answer.
    struct Answer: Sendable {
        let status: Int
        let body: [UInt8]
        /// The OAuth `error` code of a refusal (`invalid_grant`, `invalid_client`, …), when the
        /// body names one.
        let errorCode: String?

        /// Throws the class of a refusal; returns for a 2xx answer.
        func requireSuccess(_ what: String) throws {
            if (200..<300).contains(status) { return }
            let named = errorCode.map { " \($0)" } ?? ""
            if status >= 500 || status == 429 || status == 408 {
                throw AuthGateError(.providerUnavailable, "\(what): HTTP \(status)\(named)")
            }
            // Not followed (a 307 would repeat the form, client secret included, wherever it
            // points); not a refusal of the token either: tried again, and logged.
            if (300..<400).contains(status) {
                throw AuthGateError(.providerUnavailable, "\(what): HTTP \(status), a redirect, which is not followed; check the endpoint's URL")
            }
            if errorCode == "invalid_client" || errorCode == "unauthorized_client" || status == 401 {
                throw AuthGateError(.providerCredentialsRejected, "\(what): HTTP \(status)\(named); check the provider's credentials")
            }
            throw AuthGateError(.providerRejected, "\(what): HTTP \(status)\(named)")
        }

        /// The tokens of a token endpoint's answer (RFC 6749 §5.1; OpenID Connect Core §3.1.3.3).
        struct Tokens: Sendable {
            let idToken: String?
            let accessToken: String?
            let refreshToken: String?
        }

        /// The longest token accepted from a provider's answer.
        static let maximumTokenBytes = 16 * 1024

        /// The tokens of a successful answer, read by one set of rules for every exchange: the
        /// body a JSON object; each of `id_token`, `access_token` and `refresh_token` absent (or
        /// `null`, or empty) or a string of printable ASCII up to ``maximumTokenBytes``. The values
        /// are never put in an error message.
        /// - Throws: ``AuthGateError/Code/providerRejected`` for anything else.
        func tokens(_ what: String) throws -> Tokens {
            guard let object = (try? JSONValue.parse(body))?.objectValue else {
                throw AuthGateError(.providerRejected, "\(what): the answer is not a JSON object")
            }
            func token(_ name: String) throws -> String? {
                guard let value = object[name], value != .null else { return nil }
                guard let text = value.stringValue else { throw AuthGateError(.providerRejected, "\(what): \(name) is not a string") }
                guard text.utf8.count <= Self.maximumTokenBytes, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                    throw AuthGateError(.providerRejected, "\(what): \(name) is too long or not printable ASCII")
                }
                return text.isEmpty ? nil : text
            }
            return Tokens(idToken: try token("id_token"), accessToken: try token("access_token"), refreshToken: try token("refresh_token"))
        }
    }

    let client: HTTPClient
    let timeout: Duration
    /// Bodies larger than this are not read (a token response is a few kilobytes).
    static let maximumBodyBytes = 64 * 1024

    /// Posts `fields` to `url` as `application/x-www-form-urlencoded`.
    /// - Parameter what: names the call in error messages (`apple token`, `google revoke`).
    /// - Throws: ``AuthGateError/Code/providerUnavailable`` when no answer came.
    func post(_ url: String, fields: [(String, String)], what: String) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "AuthGate")
        request.body = .bytes(ByteBuffer(string: FormFields.encoded(fields)))
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(Int64(clamping: timeout.nanoseconds)))
            var buffer = try await response.body.collect(upTo: Self.maximumBodyBytes)
            let body = buffer.readBytes(length: buffer.readableBytes) ?? []
            let status = Int(response.status.code)
            return Answer(status: status, body: body, errorCode: (200..<300).contains(status) ? nil : Self.errorCode(body))
        } catch {
            throw AuthGateError(.providerUnavailable, "\(what): no answer (\(Self.describe(error)))")
        }
    }

    /// The `error` member of an OAuth error body, when it is a short printable code.
    static func errorCode(_ body: [UInt8]) -> String? {
        guard let code = (try? JSONValue.parse(body))?.objectValue?["error"]?.stringValue, code.utf8.count <= 64,
            code.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else { return nil }
        return code
    }

    /// A transport error's kind, without anything the request carried.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout { return "timed out" }
            return "transport error"
        }
        return "connection failed"
    }
}
