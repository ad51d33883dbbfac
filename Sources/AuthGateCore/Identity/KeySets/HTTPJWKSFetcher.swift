public import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Fetches key sets and discovery documents with AsyncHTTPClient: bounded time, bounded size,
/// only `200 OK` accepted.
public struct HTTPJWKSFetcher: JWKSFetching {
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let maximumBytes: Int

    /// - Parameters:
    ///   - client: a client owned by the caller (run an ``HTTPClientService`` for it).
    ///   - timeout: longest time for one fetch, body included.
    ///   - maximumBytes: largest body accepted (real JWKS documents are a few KB).
    public init(client: HTTPClient, timeout: Duration = .seconds(10), maximumBytes: Int = 1 << 20) {
        self.client = client
        self.timeout = .nanoseconds(timeout.nanoseconds)
        self.maximumBytes = maximumBytes
    }

    public func fetch(_ url: String) async throws -> FetchedDocument {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "AuthGate")
        do {
            let response = try await client.execute(request, timeout: timeout)
            guard response.status == .ok else {
                throw AuthGateError(.keysUnavailable, "GET \(url) answered \(response.status.code)")
            }
            let body = try await response.body.collect(upTo: maximumBytes)
            let maxAge = FetchedDocument.maxAge(
                cacheControl: response.headers["Cache-Control"].joined(separator: ","),
                age: response.headers.first(name: "Age")
            )
            return FetchedDocument(body: Array(body.readableBytesView), maxAge: response.headers["Cache-Control"].isEmpty ? nil : maxAge)
        } catch let error as AuthGateError {
            throw error
        } catch {
            throw AuthGateError(.keysUnavailable, "GET \(url) failed: \(error)")
        }
    }
}
