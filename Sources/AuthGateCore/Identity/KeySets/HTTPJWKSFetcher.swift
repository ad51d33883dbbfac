public import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Fetches key sets and discovery documents with AsyncHTTPClient: bounded time, bounded size,
/// only `200 OK` accepted.
///
/// Redirects are followed here, not by the client (which follows `https` to `http`): at most
/// ``maximumRedirects``, to an absolute `http(s)` URL or a path on the same origin, and never from
/// `https` to `http`, so a key set fetched over TLS is never taken from a connection anyone on
/// the path could answer.
public struct HTTPJWKSFetcher: JWKSFetching {
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let maximumBytes: Int

    /// - Parameters:
    ///   - client: a client owned by the caller (run an ``HTTPClientService`` for it).
    ///   - timeout: longest time for one fetch, redirects and body included.
    ///   - maximumBytes: largest body accepted (real JWKS documents are a few KB).
    public init(client: HTTPClient, timeout: Duration = .seconds(10), maximumBytes: Int = 1 << 20) {
        self.client = client
        self.timeout = .nanoseconds(timeout.nanoseconds)
        self.maximumBytes = maximumBytes
    }

    /// Redirects followed for one document.
    public static let maximumRedirects = 3

    public func fetch(_ url: String) async throws -> FetchedDocument {
        var current = url
        let deadline = NIODeadline.now() + timeout
        for _ in 0...Self.maximumRedirects {
            let response = try await get(current, deadline: deadline)
            guard [301, 302, 303, 307, 308].contains(response.status.code) else { return try await document(from: response, url: current) }
            _ = try? await response.body.collect(upTo: 64 << 10)
            guard let location = response.headers.first(name: "Location"), let next = Self.redirectTarget(location, from: current) else {
                throw AuthGateError(
                    .keysUnavailable,
                    "GET \(current) answered \(response.status.code) to a location that is not followed (not http(s), or https to http)")
            }
            current = next
        }
        throw AuthGateError(.keysUnavailable, "GET \(url) was redirected more than \(Self.maximumRedirects) times")
    }

    /// Where a redirect from `current` to `location` leads: an absolute `http(s)` URL, or a path
    /// (`/…`) on `current`'s origin; nil for anything else (a relative path, `//host`, another
    /// scheme, bytes outside printable ASCII) and for a move from `https` to `http`.
    static func redirectTarget(_ location: String, from current: String) -> String? {
        guard !location.isEmpty, location.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        let fromTLS = current.utf8.starts(with: "https://".utf8)
        let lower = location.lowercased()
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") {
            // The scheme in lower case, then the rules of a configured URL (no user or password).
            let absolute = lower.prefix(5) == "https" ? "https" + location.dropFirst(5) : "http" + location.dropFirst(4)
            guard ConfigurationValueParsers.isFetchableURL(absolute), !fromTLS || absolute.hasPrefix("https://") else { return nil }
            return absolute
        }
        guard location.hasPrefix("/"), !location.hasPrefix("//"), let schemeEnd = current.firstRange(of: "://") else { return nil }
        let origin = current[..<(current[schemeEnd.upperBound...].firstIndex { $0 == "/" || $0 == "?" } ?? current.endIndex)]
        let target = String(origin) + location
        return ConfigurationValueParsers.isFetchableURL(target) ? target : nil
    }

    private func get(_ url: String, deadline: NIODeadline) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "AuthGate")
        do {
            return try await client.execute(request, deadline: deadline)
        } catch {
            throw AuthGateError(.keysUnavailable, "GET \(url) failed: \(error)")
        }
    }

    private func document(from response: HTTPClientResponse, url: String) async throws -> FetchedDocument {
        do {
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
