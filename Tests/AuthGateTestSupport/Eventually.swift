/// Waits for a condition instead of sleeping for a guessed time: polls `condition` every
/// `interval` (20 ms unless a caller times what it waits for more finely) until it holds, failing with `what` after `deadline` (generous: a loaded two-core CI machine
/// is slow, and a condition that holds returns at once).
///
/// A condition that throws counts as not holding yet (a server still starting refuses
/// connections), and is polled again; if the wait runs out, the failure names the last error the
/// condition threw, so a condition that could never hold (a wrong command, a parse error) is told
/// apart from one that was merely slow.
public func waitUntil(
    _ what: String, deadline: Duration = .seconds(30), every interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let start = clock.now
    var lastError: (any Error)?
    while true {
        do {
            if try await condition() { return }
            lastError = nil
        } catch {
            lastError = error
        }
        guard clock.now - start < deadline else {
            let cause = lastError.map { "; the condition's last attempt threw: \($0)" } ?? ""
            throw TestSupportError("\(what) did not happen within \(deadline)\(cause)")
        }
        try await Task.sleep(for: interval)
    }
}
