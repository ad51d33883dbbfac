import NIOCore

/// Checks the deadlines of one event loop's client connections four times a second, so that a
/// request costs no timer of its own (moving a deadline is a field write). Deadlines are therefore
/// kept to within a quarter of a second, as nginx and HAProxy keep theirs to their tick.
final class ClientConnectionTicker: Sendable {
    static let interval = TimeAmount.milliseconds(250)

    let eventLoop: any EventLoop
    private let state: NIOLoopBoundBox<State>

    private struct State {
        var guards: [ObjectIdentifier: ClientConnectionGuard] = [:]
        var task: RepeatedTask?
    }

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.state = NIOLoopBoundBox.makeBoxSendingValue(State(), eventLoop: eventLoop)
    }

    /// Starts watching `connection`; on the ticker's loop.
    func add(_ connection: ClientConnectionGuard) {
        state.value.guards[ObjectIdentifier(connection)] = connection
        guard state.value.task == nil else { return }
        let state = self.state
        state.value.task = eventLoop.scheduleRepeatedTask(initialDelay: Self.interval, delay: Self.interval) { _ in
            let now = NIODeadline.now()
            for connection in Array(state.value.guards.values) { connection.check(now: now) }
        }
    }

    /// Stops watching `connection`; the tick stops with the last one.
    func remove(_ connection: ClientConnectionGuard) {
        state.value.guards[ObjectIdentifier(connection)] = nil
        if state.value.guards.isEmpty {
            state.value.task?.cancel()
            state.value.task = nil
        }
    }
}
