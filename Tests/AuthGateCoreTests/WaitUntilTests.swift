import AuthGateTestSupport
import Synchronization
import Testing

/// The test suites' shared wait (`waitUntil`): it must return as soon as its condition holds, and a
/// wait that runs out must say why, naming the condition's last error.
@Suite("waitUntil, the tests' wait for a condition")
struct WaitUntilTests {
    private struct Refused: Error, CustomStringConvertible {
        var description: String { "connection refused (test)" }
    }

    @Test("a condition that throws at first and then holds is waited for")
    func throwsThenHolds() async throws {
        let attempts = Mutex(0)
        try await waitUntil("the third attempt", deadline: .seconds(10)) {
            let attempt = attempts.withLock { value in
                value += 1
                return value
            }
            if attempt < 3 { throw Refused() }
            return true
        }
        #expect(attempts.withLock { $0 } == 3)
    }

    @Test("a wait that runs out names the condition's last error")
    func timeoutNamesLastError() async {
        await #expect {
            try await waitUntil("a server that never starts", deadline: .milliseconds(100)) { throw Refused() }
        } throws: { error in
            "\(error)".contains("a server that never starts did not happen within")
                && "\(error)".contains("the condition's last attempt threw: connection refused (test)")
        }
    }

    @Test("a wait that runs out on a plain false names no error")
    func timeoutOnFalse() async {
        await #expect {
            try await waitUntil("never", deadline: .milliseconds(100)) { false }
        } throws: { error in
            "\(error)".contains("never did not happen within") && !"\(error)".contains("threw")
        }
    }
}
