public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Minimal HTTP calls for tests that talk to a running gateway.
public enum HTTP {
    /// `http://127.0.0.1:<port><path>`, built from parts so that nothing is unwrapped.
    public static func loopbackURL(port: Int, path: String = "") -> URL {
        var components = URLComponents()
        components.scheme = "http"
        components.host = "127.0.0.1"
        components.port = port
        components.path = path
        return components.url ?? URL(fileURLWithPath: "/dev/null")
    }

    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        return URLSession(configuration: configuration)
    }()

    /// `GET url`: the body and the response.
    public static func get(_ url: URL, headers: [String: String] = [:]) async throws -> (Data, HTTPURLResponse) {
        try await send(url, method: "GET", headers: headers)
    }

    /// `method url` with an optional JSON body: the body and the response.
    public static func send(_ url: URL, method: String, headers: [String: String] = [:], json: String? = nil) async throws -> (Data, HTTPURLResponse)
    {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(json.utf8)
        }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestSupportError("not an HTTP response") }
        return (data, http)
    }
}
