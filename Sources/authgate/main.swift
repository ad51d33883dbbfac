import AuthGateCLI
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc

    // A launcher may hand us a blocked signal mask (a child of a dispatch thread inherits one);
    // graceful shutdown and key reloads need SIGTERM, SIGINT and SIGHUP delivered.
    var signals = sigset_t()
    sigemptyset(&signals)
    for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)

    // A closed reader of standard error (a log shipper that died) or of a socket must be a failed
    // write, not the end of the process. NIO ignores SIGPIPE when it makes its first socket; log
    // lines and the operator commands' output can come before that.
    signal(SIGPIPE, SIG_IGN)

    // One event loop per CPU this process may run on (bench/proxy, pinned to one core: 8.3k
    // requests/s with NIO's default of one loop per machine core, 10.7k with one loop).
    EventLoopSizing.limitEventLoopsToAllowedCPUs()
#endif

// Run Swift concurrency on NIO's event loops: request handlers, Redis replies and socket I/O
// then share threads instead of hopping between the cooperative pool and the loops on every
// await (bench/exchange measures the difference). Must happen before any task starts.
_ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()

await AuthGateCommand.runFromCommandLine()
