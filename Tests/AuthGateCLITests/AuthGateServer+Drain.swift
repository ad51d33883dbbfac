import AuthGateHTTP
import AuthGateTestSupport
import Foundation

extension AuthGateServer {
    /// How serve said its graceful shutdown ended, by the JSON line ``DrainReportingService``
    /// writes once the gateway has stopped: `"drained"`, `"cut"` (the drain ran out of
    /// `server.shutdown_timeout`), or nil when it wrote neither.
    ///
    /// Tests read this instead of timing `stop()` from the test process: a bound on the time
    /// from the signal to the exit measured the host too (a clean-clone CI run took 10.1 s for a
    /// stop that takes 0.1 s, in a minute when every test of the run was that slow).
    var drainEnding: String? {
        for line in log.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String] else { continue }
            switch object["msg"] {
            case DrainReportingService.drainedMessage: return "drained"
            case DrainReportingService.cutMessage: return "cut"
            default: continue
            }
        }
        return nil
    }
}
