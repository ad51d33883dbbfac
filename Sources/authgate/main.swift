import AuthGateCLI

#if canImport(Glibc)
import Glibc

// A launcher may hand us a blocked signal mask (a child of a dispatch thread inherits one);
// graceful shutdown and key reloads need SIGTERM, SIGINT and SIGHUP delivered.
var signals = sigset_t()
sigemptyset(&signals)
for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
pthread_sigmask(SIG_UNBLOCK, &signals, nil)
#endif

await AuthGateCommand.runFromCommandLine()
