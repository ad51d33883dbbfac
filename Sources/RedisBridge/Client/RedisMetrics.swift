import Metrics
import Synchronization

/// What RedisBridge reports through swift-metrics (no-ops until the application bootstraps a
/// metrics backend): command latency (blocking reads excluded), commands in flight, errors by code.
/// Made on first use, so a backend bootstrapped at start receives them.
enum RedisMetrics {
    static let commandDuration = Timer(label: "authgate_redis_command_duration_seconds", preferredDisplayUnit: .seconds)
    static let inFlightGauge = Gauge(label: "authgate_redis_commands_in_flight")
    static let inFlight = Atomic<Int>(0)

    /// Counts an error reply or failure by its stable code.
    static func failed(_ code: RedisError.Code) {
        Counter(label: "authgate_redis_errors_total", dimensions: [("code", "\(code)")]).increment()
    }

    static func started() {
        inFlightGauge.record(inFlight.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    static func finished(after start: ContinuousClock.Instant, measured: Bool) {
        inFlightGauge.record(inFlight.wrappingSubtract(1, ordering: .relaxed).newValue)
        if measured { commandDuration.recordNanoseconds((ContinuousClock.now - start).nanosecondsClamped) }
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to `Int64`.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        return seconds > Int64.max / 1_000_000_000 ? .max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
