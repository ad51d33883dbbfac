import Synchronization
public import Tracing

/// AuthGate's own spans (a sign-in, a refresh, a Redis call), made only once `authgate serve` has
/// bootstrapped a tracer (`tracing.enabled`).
///
/// With no tracer bootstrapped, `withSpan` still reads the global tracer under a lock, binds a
/// task-local context and allocates attributes for a span that records nothing, on every call: a
/// sign-in makes five. Here, with tracing off, the operation runs with no span at all.
public enum GatewaySpans {
    private static let enabled = Atomic<Bool>(false)

    /// Turns span making on: called where the tracer is bootstrapped, before anything is served.
    public static func enable() {
        enabled.store(true, ordering: .releasing)
    }

    /// Whether spans are made.
    public static var isEnabled: Bool { enabled.load(ordering: .acquiring) }

    /// Runs `operation` inside a span named `name` when tracing is on; with `nil` otherwise.
    public static func run<Result>(
        _ name: @autoclosure () -> String, ofKind kind: SpanKind = .internal, isolation: isolated (any Actor)? = #isolation,
        _ operation: ((any Span)?) async throws -> Result
    ) async rethrows -> Result {
        guard isEnabled else { return try await operation(nil) }
        return try await withSpan(name(), ofKind: kind, isolation: isolation) { span in try await operation(span) }
    }
}
