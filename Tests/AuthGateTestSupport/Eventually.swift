/// Waits for a condition instead of sleeping for a guessed time: polls `condition` every 20 ms
/// until it holds, failing with `what` after `deadline` (generous: a loaded two-core CI machine
/// is slow, and a condition that holds returns at once).
public func waitUntil(_ what: String, deadline: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
    let clock = ContinuousClock()
    let start = clock.now
    while await !((try? condition()) ?? false) {
        guard clock.now - start < deadline else { throw TestSupportError("\(what) did not happen within \(deadline)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
