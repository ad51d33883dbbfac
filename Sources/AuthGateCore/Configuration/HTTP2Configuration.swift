/// `server.http2`: HTTP/2 for clients, negotiated with ALPN (`h2`) on a TLS listener and by
/// prior knowledge (the HTTP/2 preface, `curl --http2-prior-knowledge`) on a plain one. Requests
/// reach the same endpoints and routes as over HTTP/1.1; proxied requests go to upstreams over
/// HTTP/1.1.
public struct HTTP2Configuration: Sendable, Hashable {
    /// Off: the listener speaks HTTP/1.1 only (ALPN offers `http/1.1` alone).
    public var enabled: Bool
    /// Most streams a client may have open at once on one connection (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    public var maxConcurrentStreams: Int
    /// Largest decoded header list of one request (`SETTINGS_MAX_HEADER_LIST_SIZE`), in bytes.
    public var maxHeaderListSize: Int

    public init(enabled: Bool = true, maxConcurrentStreams: Int = 100, maxHeaderListSize: Int = 64 << 10) {
        self.enabled = enabled
        self.maxConcurrentStreams = maxConcurrentStreams
        self.maxHeaderListSize = maxHeaderListSize
    }

    static func read(_ section: ConfigurationSection) -> HTTP2Configuration {
        var http2 = HTTP2Configuration()
        http2.enabled = section.bool("enabled", default: true)
        http2.maxConcurrentStreams = section.int("max_concurrent_streams", default: 100, in: 1...10_000)
        http2.maxHeaderListSize = section.byteSize("max_header_list_size", default: 64 << 10)
        if http2.maxHeaderListSize < 1024 || http2.maxHeaderListSize > 1 << 20 {
            section.report("max_header_list_size", "must be between 1KiB and 1MiB")
        }
        section.finish()
        return http2
    }
}
