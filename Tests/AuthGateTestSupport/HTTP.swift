public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Minimal HTTP calls for tests that talk to a running gateway.
public enum HTTP {
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        return URLSession(configuration: configuration)
    }()

    /// `GET url`: the body and the response.
    public static func get(_ url: URL, headers: [String: String] = [:]) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestSupportError("not an HTTP response") }
        return (data, http)
    }
}
