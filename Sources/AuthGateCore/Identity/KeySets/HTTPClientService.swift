public import AsyncHTTPClient
import NIOCore
public import ServiceLifecycle

/// Runs an `HTTPClient` as a `Service`: on graceful shutdown it shuts the client down.
public struct HTTPClientService: Service {
    public let client: HTTPClient

    public init(client: HTTPClient) {
        self.client = client
    }

    /// A client for fetching provider keys: a few redirects allowed, no decompression,
    /// explicit connect and read timeouts.
    public static func makeKeyFetchingClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .follow(max: 3, allowCycles: false),
            timeout: .init(connect: .seconds(5), read: .seconds(10))
        )
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
