import AuthGateHTTP
import AuthGateTestSupport
import Logging
import ServiceLifecycle
import Testing

@Suite("How a graceful shutdown ended, said once the gateway stopped")
struct DrainReportingServiceTests {
    /// Stands for the application: tells `started` it runs, then ends at graceful shutdown or
    /// (`holds`, a connection that does not finish) only when cancelled; or ends of itself.
    struct Application: Service {
        enum Behaviour { case drains, holds, endsItself, fails }
        let behaviour: Behaviour
        let started: AsyncStream<Void>.Continuation

        struct Failure: Error {}

        func run() async throws {
            started.yield()
            switch behaviour {
            case .drains: try? await gracefulShutdown()
            case .holds: try? await Task.sleep(for: .seconds(3600))
            case .endsItself: return
            case .fails: throw Failure()
            }
        }
    }

    /// Runs the application behind the report in a group that shuts down (when `shutsDown`) as
    /// soon as it has started, with `timeout` as its shutdown time; returns the lines logged and
    /// what the group's run threw.
    static func run(_ behaviour: Application.Behaviour, shutsDown: Bool = true, timeout: Duration = .seconds(30)) async
        -> ([RecordedLines.Line], (any Error)?)
    {
        let recorded = RecordedLines()
        let logger = Logger(label: "drain-test") { _ in RecordedLines.Handler(lines: recorded) }
        let (started, starting) = AsyncStream<Void>.makeStream()
        let reported = DrainReportingService(Application(behaviour: behaviour, started: starting), shutdownTimeout: timeout, logger: logger)
        let quiet = Logger(label: "drain-test-group") { _ in SwiftLogNoOpLogHandler() }
        var configuration = ServiceGroupConfiguration(services: [reported], logger: quiet)
        configuration.maximumGracefulShutdownDuration = timeout
        let group = ServiceGroup(configuration: configuration)
        let running = Task { try await group.run() }
        for await _ in started { break }
        if shutsDown { await group.triggerGracefulShutdown() }
        let thrown: (any Error)?
        do {
            try await running.value
            thrown = nil
        } catch {
            thrown = error
        }
        return (recorded.lines.filter { $0.message.hasPrefix("graceful shutdown") }, thrown)
    }

    @Test("an application that finishes when told: one info line, drained, with how long it took")
    func drained() async throws {
        let (lines, _) = await Self.run(.drains)
        #expect(lines.map(\.message) == [DrainReportingService.drainedMessage])
        let line = try #require(lines.first)
        #expect(line.level == .info)
        #expect(line.metadata["gw.drain_ms"].flatMap { Int("\($0)") } != nil, "\(line.metadata)")
    }

    @Test("an application that holds the drain: cut when the shutdown time runs out, a warning naming it")
    func cut() async throws {
        let (lines, _) = await Self.run(.holds, timeout: .milliseconds(200))
        #expect(lines.map(\.message) == [DrainReportingService.cutMessage])
        let line = try #require(lines.first)
        #expect(line.level == .warning)
        #expect(line.metadata["gw.shutdown_timeout_ms"] == "200")
        let drained = try #require(line.metadata["gw.drain_ms"].flatMap { Int("\($0)") })
        #expect(drained >= 200, "cut after \(drained) ms, before the 200 ms ran out")
    }

    @Test("an application that ends before any shutdown says nothing of a drain; its error still reaches the group")
    func noShutdown() async throws {
        let (ended, _) = await Self.run(.endsItself, shutsDown: false)
        #expect(ended.isEmpty)
        let (failed, thrown) = await Self.run(.fails, shutsDown: false)
        #expect(failed.isEmpty)
        #expect(thrown != nil, "the application's error was swallowed")
    }

    @Test("the outcome from the instants alone")
    func outcome() {
        let began = ContinuousClock.now
        let ended = began + .milliseconds(1500)
        #expect(DrainReportingService.Outcome.of(began: began, ended: ended, cancelled: false) == .drained(drain: .milliseconds(1500)))
        #expect(DrainReportingService.Outcome.of(began: began, ended: ended, cancelled: true) == .cut(drain: .milliseconds(1500)))
        #expect(DrainReportingService.Outcome.of(began: nil, ended: ended, cancelled: true) == nil)
    }
}
