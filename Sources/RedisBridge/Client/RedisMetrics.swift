import Metrics
import Synchronization

/// What RedisBridge reports through swift-metrics (no-ops until the application bootstraps a
/// metrics backend): command latency (blocking reads excluded), commands in flight, failed
/// commands by code, connection attempts, script loads and followed master switches.
/// Made on first use, so a backend bootstrapped at start receives them.
enum RedisMetrics {
    static let commandDuration = Timer(label: "authgate_redis_command_duration_seconds", preferredDisplayUnit: .seconds)
    static let inFlightGauge = Gauge(label: "authgate_redis_commands_in_flight")
    static let inFlight = Atomic<Int>(0)

    /// Counts an error reply or failure by its stable code.
    static func failed(_ code: RedisError.Code) {
        Counter(label: "authgate_redis_errors_total", dimensions: [("code", "\(code)")]).increment()
    }

    /// A connection attempt's outcome (`authgate_redis_connection_attempts_total{result}`).
    static func connectionAttempt(succeeded: Bool) {
        Counter(label: "authgate_redis_connection_attempts_total", dimensions: [("result", succeeded ? "connected" : "failed")]).increment()
    }

    /// A script Redis did not have was sent whole (`NOSCRIPT` after a restart or failover).
    static func scriptLoaded() {
        Counter(label: "authgate_redis_script_loads_total").increment()
    }

    /// The client moved to a master a Sentinel announced.
    static func masterSwitched() {
        Counter(label: "authgate_redis_master_switches_total").increment()
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
