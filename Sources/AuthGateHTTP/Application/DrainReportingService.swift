import AuthGateCore
public import Logging
public import ServiceLifecycle
import Synchronization

/// Runs the gateway's application and, once it has stopped, says how its graceful shutdown
/// ended: **drained** (everything open had finished when it stopped) or **cut** (the drain ran
/// out of `server.shutdown_timeout` and what was still open was closed unfinished), with how long
/// the drain took.
///
/// ServiceLifecycle reports a drain that runs out of its time only at debug level, so an operator
/// could not tell a deploy that dropped requests from one that did not; the tests read the same
/// line instead of timing the process from outside, which measured the host as much as the
/// gateway.
public struct DrainReportingService: Service {
    /// How a graceful shutdown ended.
    public enum Outcome: Equatable, Sendable {
        /// Everything open finished: the drain took `drain`.
        case drained(drain: Duration)
        /// `server.shutdown_timeout` ran out after `drain` and what was still open was closed.
        case cut(drain: Duration)

        /// The outcome of a run that returned `drainEnded - drainBegan` after the shutdown
        /// began; `cancelled`: the group cancelled it (its shutdown time ran out). Nil when no
        /// graceful shutdown began (the run ended of itself: an error, or a test's cancellation).
        public static func of(began: ContinuousClock.Instant?, ended: ContinuousClock.Instant, cancelled: Bool) -> Outcome? {
            guard let began else { return nil }
            let drain = ended - began
            return cancelled ? .cut(drain: drain) : .drained(drain: drain)
        }
    }

    /// The message of the line a drain that finished writes.
    public static var drainedMessage: String { "graceful shutdown drained: everything open finished" }
    /// The message of the line a drain that ran out of `server.shutdown_timeout` writes.
    public static var cutMessage: String {
        "graceful shutdown ran out of server.shutdown_timeout: what was still open was closed unfinished"
    }

    let wrapped: any Service
    let shutdownTimeout: Duration
    let logger: Logger

    /// - Parameters:
    ///   - wrapped: the application (its server and services).
    ///   - shutdownTimeout: `server.shutdown_timeout`, named in the line a cut drain writes.
    public init(_ wrapped: any Service, shutdownTimeout: Duration, logger: Logger) {
        self.wrapped = wrapped
        self.shutdownTimeout = shutdownTimeout
        self.logger = logger
    }

    public func run() async throws {
        let clock = ContinuousClock()
        let began = Mutex<ContinuousClock.Instant?>(nil)
        var failure: (any Error)?
        do {
            try await withGracefulShutdownHandler {
                try await wrapped.run()
            } onGracefulShutdown: {
                began.withLock { $0 = $0 ?? clock.now }
            }
        } catch {
            failure = error
        }
        let outcome = Outcome.of(began: began.withLock { $0 }, ended: clock.now, cancelled: Task.isCancelled)
        report(outcome)
        if let failure { throw failure }
    }

    /// Writes the line that says how the drain ended.
    func report(_ outcome: Outcome?) {
        switch outcome {
        case .drained(let drain):
            logger.info(Logger.Message(stringLiteral: Self.drainedMessage), metadata: ["gw.drain_ms": "\(drain.nanoseconds / 1_000_000)"])
        case .cut(let drain):
            logger.warning(
                Logger.Message(stringLiteral: Self.cutMessage),
                metadata: ["gw.drain_ms": "\(drain.nanoseconds / 1_000_000)", "gw.shutdown_timeout_ms": "\(shutdownTimeout.nanoseconds / 1_000_000)"])
        case nil:
            break
        }
    }
}
