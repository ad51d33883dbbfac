public import AsyncHTTPClient
import NIOCore
public import ServiceLifecycle

/// Runs an `HTTPClient` as a `Service`: on graceful shutdown it shuts the client down.
public struct HTTPClientService: Service {
    public let client: HTTPClient

    public init(client: HTTPClient) {
        self.client = client
    }

    /// The client for providers (key sets, discovery, Apple's and Google's token and revocation
    /// endpoints): no decompression, explicit connect and read timeouts, and no redirects
    /// followed (the client would follow one from `https` to `http`, and a 307 would repeat a
    /// POST with its client secret there): ``HTTPJWKSFetcher`` follows a key fetch's own.
    ///
    /// A connection the provider refuses fails the call at once. AsyncHTTPClient's default is to
    /// try again with backoff until the connect timeout: every sign-in waiting on a key fetch to
    /// a provider that was down waited 5 s for an answer that was already known. The callers have
    /// retry schedules of their own (a key set's backoff, the revocation outbox).
    public static func makeKeyFetchingClient(connectTimeout: Duration = .seconds(5)) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(connectTimeout.nanoseconds), read: .seconds(10))
        )
        configuration.decompression = .disabled
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
