import Metrics
import Synchronization

/// Every metric the gateway emits, in one place, through swift-metrics (Prometheus text at
/// `/metrics` when `authgate serve` bootstraps it; no-ops otherwise). Label values are bounded:
/// route names from the configuration, status classes, provider names, outcome codes. Never a
/// user id, token or other unbounded value.
public enum GatewayMetrics {
    /// One answered request: `route` is a configured route's name, or the API path pattern.
    public static func request(route: String, status: Int, duration: Duration) {
        let series = requestSeries.withLock { known in
            if let series = known[route] { return series }
            let series = RouteRequests(route: route)
            known[route] = series
            return series
        }
        series.record(status: status, duration: duration)
    }

    /// Each label's series, made on its first request: making a metric goes through the
    /// registry's lookup (a lock, label validation, a dictionary keyed by the whole label set),
    /// which was a few percent of the cheapest answer's time. Labels are bounded (see above).
    private static let requestSeries = Mutex<[String: RouteRequests]>([:])

    /// An ID-token sign-in: `outcome` is `ok` or the stable rejection code (`expired`, `nonce_mismatch`, `replayed`, …).
    public static func signIn(provider: String, outcome: String) {
        counter(CounterKey(label: "authgate_sign_ins_total", first: provider, second: outcome), names: ("provider", "outcome")).increment()
    }

    /// Log lines lost: the log writer's queue was full (standard error not read fast enough), or
    /// writing to standard error failed.
    public static func logLinesDropped(_ count: Int) {
        Counter(label: "authgate_log_lines_dropped_total").increment(by: count)
    }

    /// A refresh: `rotated`, `reused_in_window`, `reuse_revoked`, `expired`, `not_found`, `banned`.
    public static func refresh(outcome: String) {
        counter(CounterKey(label: "authgate_refresh_total", first: outcome), names: ("outcome", nil)).increment()
    }

    /// A counter on the hot path, made once per label set and kept: finding it allocates nothing
    /// (the key is the label and its one or two dimension values; each label's dimension names
    /// are fixed and read only when the counter is made).
    private static func counter(_ key: CounterKey, names: (String, String?)) -> Counter {
        counters.withLock { known in
            if let counter = known[key] { return counter }
            var dimensions = [(names.0, key.first)]
            if let second = names.1, let value = key.second { dimensions.append((second, value)) }
            let counter = Counter(label: key.label, dimensions: dimensions)
            known[key] = counter
            return counter
        }
    }

    /// A hot-path counter's label and dimension values.
    private struct CounterKey: Hashable {
        let label: String
        let first: String
        var second: String? = nil
    }

    /// Made counters by label and dimension values.
    private static let counters = Mutex<[CounterKey: Counter]>([:])

    /// A provider key set was fetched (`failed` when the fetch did not give a usable set).
    public static func keySetFetch(provider: String, failed: Bool) {
        if failed {
            Counter(label: "authgate_provider_keyset_fetch_failures_total", dimensions: [("provider", provider)]).increment()
        } else {
            Counter(label: "authgate_provider_keyset_fetches_total", dimensions: [("provider", provider)]).increment()
        }
    }

    /// A call to revoke a provider token from the outbox: `outcome` is `revoked`,
    /// `already_invalid`, `retry` or `failed`.
    public static func providerRevocation(provider: String, outcome: String) {
        Counter(label: "authgate_provider_revocations_total", dimensions: [("provider", provider), ("outcome", outcome)]).increment()
    }

    /// An authorization code exchanged at a provider for its refresh token: `outcome` is `ok` or
    /// the error code.
    public static func providerCodeExchange(provider: String, outcome: String) {
        Counter(label: "authgate_provider_code_exchanges_total", dimensions: [("provider", provider), ("outcome", outcome)]).increment()
    }

    /// A browser flow's callback: `outcome` is `ok` or the `error_code` the browser was sent back with.
    public static func browserFlowCallback(outcome: String) {
        Counter(label: "authgate_browser_flow_callbacks_total", dimensions: [("outcome", outcome)]).increment()
    }

    /// Audit events dropped because too many waited to be written (the store was unreachable).
    public static func auditDropped(_ count: Int) {
        Counter(label: "authgate_audit_dropped_total").increment(by: count)
    }

    /// Seconds until the listener's TLS certificate expires (negative once it has).
    public static func tlsCertificateExpiry(seconds: Double) {
        Gauge(label: "authgate_tls_certificate_expiry_seconds").record(seconds)
    }

    /// How old the provider key set in use is, in seconds.
    public static func keySetAge(provider: String, seconds: Double) {
        Gauge(label: "authgate_provider_keyset_age_seconds", dimensions: [("provider", provider)]).record(seconds)
    }

    /// How far behind the revocation feed is, in seconds.
    public static func revocationFeedLag(seconds: Double) {
        Gauge(label: "authgate_revocation_feed_lag_seconds").record(seconds)
    }

    /// A lookup in the proxy's verified-token cache.
    public static func tokenCache(hit: Bool) {
        (hit ? tokenCacheHits : tokenCacheMisses).increment()
    }

    // Made once, on first use (after `authgate serve` has bootstrapped the metrics system):
    // making a metric goes through the registry's lookup, too slow for every proxied request.
    private static let tokenCacheHits = Counter(label: "authgate_token_cache_lookups_total", dimensions: [("result", "hit")])
    private static let tokenCacheMisses = Counter(label: "authgate_token_cache_lookups_total", dimensions: [("result", "miss")])

    /// ``request(route:status:duration:)`` for one route, with its series made once (one per
    /// status class): the proxy records every request through one of these.
    public final class RouteRequests: Sendable {
        private let series: [(Counter, Timer)]

        public init(route: String) {
            series = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"].map { statusClass in
                let dimensions = [("route", route), ("status_class", statusClass)]
                return (
                    Counter(label: "authgate_http_requests_total", dimensions: dimensions),
                    Timer(label: "authgate_http_request_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
                )
            }
        }

        public func record(status: Int, duration: Duration) {
            let index = (100..<600).contains(status) ? status / 100 : 0
            series[index].0.increment()
            series[index].1.recordNanoseconds(duration.nanoseconds)
        }
    }

    /// A failed exchange with an upstream: `kind` is `connect`, `timeout`, `connection_lost`, `protocol`.
    public static func upstreamError(route: String, kind: String) {
        Counter(label: "authgate_upstream_errors_total", dimensions: [("route", route), ("kind", kind)]).increment()
    }

    /// Client connections open now.
    public static func clientConnections(open: Int) {
        Gauge(label: "authgate_client_connections").record(open)
    }

    /// A client connection refused because `server.max_connections` were open.
    public static func clientConnectionRefused() {
        Counter(label: "authgate_client_connections_refused_total").increment()
    }

    /// A client connection closed for being too slow: `kind` is `request_head`, `keep_alive` or `client_idle`.
    public static func clientTimeout(kind: String) {
        Counter(label: "authgate_client_timeouts_total", dimensions: [("kind", kind)]).increment()
    }

    /// An HTTP/2 connection closed after a connection error (NIO's flood guards: `ExcessiveRSTFrames`,
    /// `ExcessiveContinuationFrames`, `ExcessiveOutboundFrameBuffering`, …): `kind` is the error's type name.
    public static func http2ConnectionError(kind: String) {
        Counter(label: "authgate_http2_connection_errors_total", dimensions: [("kind", kind)]).increment()
    }

    /// An HTTP/2 stream refused for exceeding `server.http2.max_concurrent_streams` on its connection.
    public static func http2StreamRefused() {
        Counter(label: "authgate_http2_streams_refused_total").increment()
    }

    /// A WebSocket tunnel opened (`http_version` `1.1`, or `2` for RFC 8441); `authgate_websocket_tunnels` counts those open now.
    public static func webSocketOpened(httpVersion: String) {
        Counter(label: "authgate_websocket_tunnels_opened_total", dimensions: [("http_version", httpVersion)]).increment()
        openTunnelsChanged(by: 1)
    }

    /// A WebSocket tunnel ended: `outcome` is the first reason either side gave (`closed`: a close
    /// frame from either side, or a connection's close; `session_ended`: revoked, signed out, banned or
    /// expired, 1008; `shutdown`; `input_closed`; `frame_refused`; `closed_before_relay`).
    public static func webSocketClosed(outcome: String) {
        Counter(label: "authgate_websocket_tunnels_closed_total", dimensions: [("outcome", outcome)]).increment()
        openTunnelsChanged(by: -1)
    }

    /// `authgate_websocket_tunnels` after `delta` tunnels opened (or, negative, closed).
    private static func openTunnelsChanged(by delta: Int) {
        Gauge(label: "authgate_websocket_tunnels").record(
            openTunnels.withLock { open in
                open += delta
                return open
            })
    }

    private static let openTunnels = Mutex(0)
}
